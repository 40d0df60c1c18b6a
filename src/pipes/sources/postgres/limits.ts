import type pg from 'pg';
import type { Problem } from '../../../errors.js';
import type { PostgresSource } from './connection.js';
import { snapshotParallelism } from './snapshot.js';

const PATH = 'source.postgres';

/** Sessions a run holds besides its snapshot's ranges: its own (catalog, slot) and the exported snapshot's. */
export const RUN_SESSIONS = 2;

/**
 * What the server's fixed limits leave a pipe, checked at create: a snapshot that needs more
 * sessions than the server ever lets this user open, or a slot where none is free, can never run.
 * How busy the server is now is not a reason to refuse: a snapshot reads on fewer sessions when
 * the server refuses one (sessions.ts).
 */
export async function limitProblems(client: pg.Client, source: PostgresSource): Promise<Problem[]> {
  const mode = source.settings?.replicationMode ?? 'cdc';
  const problems: Problem[] = [];
  if (mode !== 'cdc_only') {
    const problem = await sessionProblem(client, source);
    if (problem) problems.push(problem);
  }
  if (mode !== 'snapshot') problems.push(...(await replicationProblems(client, source)));
  return problems;
}

interface ServerLimits {
  maxConnections: number;
  superuserReserved: number;
  reserved: number;
  superuser: boolean;
  mayUseReserved: boolean;
  roleLimit: number;
}

async function sessionProblem(client: pg.Client, source: PostgresSource): Promise<Problem | undefined> {
  const { rows } = await client.query<ServerLimits>(
    `SELECT current_setting('max_connections')::int AS "maxConnections",
            current_setting('superuser_reserved_connections')::int AS "superuserReserved",
            coalesce(current_setting('reserved_connections', true), '0')::int AS reserved,
            r.rolsuper AS superuser, r.rolconnlimit AS "roleLimit",
            CASE WHEN to_regrole('pg_use_reserved_connections') IS NULL THEN false
                 ELSE pg_has_role(current_user, to_regrole('pg_use_reserved_connections'), 'MEMBER') END
              AS "mayUseReserved"
       FROM pg_roles r WHERE r.rolname = current_user`,
  );
  const limits = rows[0];
  if (!limits) return undefined;
  const { allowed, why } = sessionsAllowed(limits);
  const tables = Math.min(source.settings?.snapshotNumberOfParallelTables ?? 1, source.tableMappings.length);
  const { perTable } = snapshotParallelism(source.settings);
  const needed = perTable * tables + RUN_SESSIONS;
  if (needed <= allowed) return undefined;
  return {
    path: `${PATH}.settings.initialLoadParallelism`,
    message:
      `the snapshot reads ${perTable * tables} ranges at once (initialLoadParallelism ${perTable} × ${tables} table${tables === 1 ? '' : 's'} at once), ` +
      `on ${needed} sessions with the pipe's own ${RUN_SESSIONS}, and ${why}: ` +
      `lower initialLoadParallelism or snapshotNumberOfParallelTables, or raise the limit`,
  };
}

/** How many sessions the server ever lets this user open, and which limit says so. */
function sessionsAllowed(limits: ServerLimits): { allowed: number; why: string } {
  const server = limits.superuser
    ? limits.maxConnections
    : limits.maxConnections - limits.superuserReserved - (limits.mayUseReserved ? 0 : limits.reserved);
  const serverWhy = limits.superuser
    ? `the server allows ${server} (max_connections)`
    : `the server allows this user ${server} (max_connections ${limits.maxConnections} less the ${limits.maxConnections - server} reserved)`;
  // A superuser's CONNECTION LIMIT is not enforced.
  if (!limits.superuser && limits.roleLimit >= 0 && limits.roleLimit < server) {
    return { allowed: limits.roleLimit, why: `the user's CONNECTION LIMIT is ${limits.roleLimit}` };
  }
  return { allowed: server, why: serverWhy };
}

/** A slot to create needs a free one; replication needs a WAL sender. */
async function replicationProblems(client: pg.Client, source: PostgresSource): Promise<Problem[]> {
  const named = source.settings?.replicationSlotName;
  const { rows } = await client.query<{ slots: number; used: number; senders: number; namedExists: boolean }>(
    `SELECT current_setting('max_replication_slots')::int AS slots,
            (SELECT count(*) FROM pg_replication_slots)::int AS used,
            current_setting('max_wal_senders')::int AS senders,
            EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $1) AS "namedExists"`,
    [named ?? ''],
  );
  const row = rows[0];
  if (!row) return [];
  const problems: Problem[] = [];
  const takesNamed = source.settings?.replicationMode === 'cdc_only' && row.namedExists;
  if (!takesNamed && row.used >= row.slots) {
    problems.push({
      path: `${PATH}.host`,
      message:
        row.slots === 0
          ? 'the server has max_replication_slots = 0: raise it and restart the server (or use replicationMode snapshot)'
          : `the server has no free replication slot (all ${row.slots} of max_replication_slots are in use): drop one no longer needed with pg_drop_replication_slot, or raise max_replication_slots`,
    });
  }
  if (row.senders === 0) {
    problems.push({
      path: `${PATH}.host`,
      message:
        'the server has max_wal_senders = 0: raise it and restart the server (or use replicationMode snapshot)',
    });
  }
  return problems;
}
