import type pg from 'pg';
import type { Problem } from '../../../../errors.js';
import type { PipeConfig } from '../../../model.js';
import type { CheckContext } from '../../contract.js';
import { mappedTableProblems, publicationProblem, readTable, unpublishable } from '../catalog/index.js';
import {
  closeClient,
  connect,
  endedWait,
  LOCK_TIMEOUT_MS,
  limitProblems,
  type PostgresSource,
  publicationPrivilegeProblems,
  QUERY_TIMEOUT_MS,
  SourceConnectError,
} from '../session/index.js';

const PATH = 'source.postgres';

/**
 * What a database pipe needs of its server, checked before anything is stored (README, "Pipes":
 * connectivity failures are 400s): it connects, replicates (wal_level logical, the REPLICATION
 * privilege), may make the publication Sluice makes (session/privileges.ts), every mapped table exists
 * with a key the target can be ordered by, excluded and sorting columns exist, the publication
 * named covers the tables, the targets are absent or empty, and the server's limits leave room
 * for the snapshot's sessions and a slot (session/server-limits.ts). A PATCH of a pipe that never ran passes
 * `pipeId` (change-checks.ts).
 */
export async function postgresProblems(
  config: PipeConfig,
  context: CheckContext & { pipeId?: string },
): Promise<Problem[]> {
  const source = config.source.postgres as PostgresSource;
  const early = unsupported(source);
  if (early.length > 0) return early;
  return checkedOn(source, context, async (client) => {
    const mode = source.settings?.replicationMode ?? 'cdc';
    return [
      ...(await sourceProblems(client, source, context.pipeId)),
      ...(await limitProblems(client, source, mode)),
      ...(await targetProblems(config, source, context)),
    ];
  });
}

/**
 * What the pipe's user must be able to do on the server: replicate and make or alter the
 * publication Sluice makes (both but in `snapshot` mode), read the tables. `pipeId`: the pipe's
 * own publication may exist already (session/privileges.ts).
 */
export async function sourceProblems(
  client: pg.Client,
  source: PostgresSource,
  pipeId?: string,
): Promise<Problem[]> {
  const mode = source.settings?.replicationMode ?? 'cdc';
  const problems: Problem[] = [];
  if (mode !== 'snapshot') {
    problems.push(...(await replicationProblems(client, source)));
    problems.push(...(await publicationPrivilegeProblems(client, source, pipeId)));
  }
  problems.push(...(await tableProblems(client, source, mode)));
  return problems;
}

/**
 * Runs checks on a connection to the source; a refused connection, or a check the server did not
 * answer in time, is a problem naming the field to fix.
 */
export async function checkedOn(
  source: PostgresSource,
  context: Pick<CheckContext, 'allowPrivateSources' | 'logger'>,
  checks: (client: pg.Client) => Promise<Problem[]>,
): Promise<Problem[]> {
  let client: pg.Client;
  try {
    client = await connect(source, context);
  } catch (error) {
    if (error instanceof SourceConnectError)
      return [{ path: `${PATH}.${error.field}`, message: error.message }];
    throw error;
  }
  try {
    return await checks(client);
  } catch (error) {
    const problem = unansweredProblem(error);
    if (problem) return [problem];
    throw error;
  } finally {
    await closeClient(client, context.logger);
  }
}

/**
 * A check the server did not answer in time, as a problem to try again later; else undefined.
 * Reading a table's size waits for its lock, up to LOCK_TIMEOUT_MS.short.
 */
function unansweredProblem(error: unknown): Problem | undefined {
  const wait = endedWait(error);
  if (wait === 'lock') {
    return {
      path: `${PATH}.tableMappings`,
      message: `a mapped table is locked by another session (the checks waited ${LOCK_TIMEOUT_MS.short / 1000} s for it): create the pipe once it is free`,
    };
  }
  if (wait === 'answer') {
    return {
      path: `${PATH}.host`,
      message: `the server did not answer the checks within ${QUERY_TIMEOUT_MS / 1000} s: try again`,
    };
  }
  return undefined;
}

function unsupported(source: PostgresSource): Problem[] {
  const problems: Problem[] = [];
  if (source.authentication === 'IAM_ROLE') {
    problems.push({
      path: `${PATH}.authentication`,
      message: 'IAM_ROLE is not supported yet for PostgreSQL sources: use basic with credentials',
    });
  }
  source.tableMappings.forEach((mapping, index) => {
    if (mapping.partitionKey) {
      problems.push({
        path: `${PATH}.tableMappings[${index}].partitionKey`,
        message: 'not supported yet: the snapshot is always cut into ctid ranges; leave partitionKey out',
      });
    }
  });
  return problems;
}

async function replicationProblems(client: pg.Client, source: PostgresSource): Promise<Problem[]> {
  const problems: Problem[] = [];
  const settings = await client.query<{ wal_level: string; may: boolean }>(
    `SELECT current_setting('wal_level') AS wal_level,
            (SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user) AS may`,
  );
  const row = settings.rows[0];
  if (row?.wal_level !== 'logical') {
    problems.push({
      path: `${PATH}.host`,
      message: `the server's wal_level is ${row?.wal_level}: set wal_level = logical and restart it (or use replicationMode snapshot)`,
    });
  }
  if (!row?.may) {
    problems.push({
      path: `${PATH}.credentials`,
      message:
        'the user may not replicate: ALTER ROLE ... WITH REPLICATION (or use replicationMode snapshot)',
    });
  }
  const publication = source.settings?.publicationName;
  if (publication) {
    const found = await client.query('SELECT 1 FROM pg_publication WHERE pubname = $1', [publication]);
    if (found.rowCount === 0) {
      problems.push({
        path: `${PATH}.settings.publicationName`,
        message: `there is no publication ${publication}: create it, or leave publicationName out and Sluice makes one`,
      });
    } else {
      const problem = await publicationProblem(client, publication, source);
      if (problem) problems.push({ path: `${PATH}.settings.publicationName`, message: problem });
    }
  }
  for (const { field, message } of await unpublishable(client, source))
    problems.push({ path: `${PATH}.${field}`, message });
  return problems;
}

async function tableProblems(client: pg.Client, source: PostgresSource, mode: string): Promise<Problem[]> {
  const tables = [];
  for (const mapping of source.tableMappings)
    tables.push(await readTable(client, mapping.sourceSchemaName ?? 'public', mapping.sourceTable));
  return mappedTableProblems(tables, source, mode);
}

async function targetProblems(
  config: PipeConfig,
  source: PostgresSource,
  context: CheckContext,
): Promise<Problem[]> {
  const problems: Problem[] = [];
  const database = config.destination.database ?? 'default';
  for (const [index, mapping] of source.tableMappings.entries()) {
    const at = `${PATH}.tableMappings[${index}]`;
    if (mapping.partitionByExpr) {
      const problem = await context.target.expressionProblem(mapping.partitionByExpr);
      if (problem) problems.push({ path: `${at}.partitionByExpr`, message: problem });
    }
    const existing = await context.target.describe(database, mapping.targetTable);
    if (existing && (await context.target.countRows(database, mapping.targetTable)) > 0) {
      problems.push({
        path: `${at}.targetTable`,
        message: `${database}.${mapping.targetTable} already exists and holds rows: pick another name or empty it`,
      });
    }
  }
  return problems;
}
