import type pg from 'pg';
import type { Problem } from '../../../../errors.js';
import type { PipeConfig } from '../../../model.js';
import type { ChangeContext } from '../../contract.js';
import { parseLsn, slotProblem, slotState } from '../changes/index.js';
import { POSTGRES_SERVER_FIELDS } from '../config.js';
import type { Cursor } from '../run/index.js';
import { closeClient, connect, type PostgresSource, pgLiteral, systemIdentifier } from '../session/index.js';
import { checkedOn, postgresProblems, sourceProblems } from './create-checks.js';

const PATH = 'source.postgres';
const RESYNC =
  'moving the pipe there needs a resync, which keeps nothing of its position: create a new pipe for that server (or point this one back)';

/**
 * A PATCH of a database pipe's source, checked as at create on the server it names: the user may
 * still replicate, alter the pipe's publication and read the tables (a rotated password is tried). A new `host`, `port` or
 * `database` (the pipe is stopped: update.ts) must reach the same server, by its system
 * identifier, with the pipe's slot there in that database and not past the pipe's position; else
 * nothing is stored, so the position is never lost silently. A pipe that never ran has no
 * position: it is checked as a new one.
 */
export async function changedPostgresProblems(
  before: PipeConfig,
  after: PipeConfig,
  context: ChangeContext,
): Promise<Problem[]> {
  const cursor = context.cursor as Cursor | null;
  if (!cursor) return postgresProblems(after, context);
  const source = after.source.postgres as PostgresSource;
  const previous = before.source.postgres as PostgresSource;
  const moved = POSTGRES_SERVER_FIELDS.some((field) => source[field] !== previous[field]);
  return checkedOn(source, context, async (client) => {
    const problems = await sourceProblems(client, source, context.pipeId);
    if (moved) problems.push(...(await movedProblems(client, source, previous, cursor, context)));
    return problems;
  });
}

async function movedProblems(
  client: pg.Client,
  source: PostgresSource,
  previous: PostgresSource,
  cursor: Cursor,
  context: ChangeContext,
): Promise<Problem[]> {
  const where = `${source.host}:${source.port}/${source.database}`;
  const known = cursor.server ?? (await identityAt(previous, context));
  const found = await systemIdentifier(client, source, context);
  if (found === undefined) {
    const message = `${where} does not say its system identifier (GRANT pg_monitor to the pipe's user), so it cannot be told to be the server the pipe read from: ${RESYNC}`;
    return [{ path: `${PATH}.host`, message }];
  }
  if (known === undefined) {
    const message = `the pipe recorded no system identifier of its server and ${previous.host}:${previous.port} does not answer with one, so ${where} cannot be told to be that server: ${RESYNC}`;
    return [{ path: `${PATH}.host`, message }];
  }
  if (known !== found) {
    return [
      {
        path: `${PATH}.host`,
        message: `${where} is another server (system identifier ${found}; the pipe's is ${known}): ${RESYNC}`,
      },
    ];
  }
  if (!cursor.slot) {
    // A snapshot without a slot: its ranges are the same server's, of the same database.
    if (source.database === previous.database) return [];
    return [{ path: `${PATH}.database`, message: `another database holds other tables: ${RESYNC}` }];
  }
  const problem = await slotHere(client, cursor, source.database, where);
  return problem ? [{ path: `${PATH}.database`, message: `${problem}: ${RESYNC}` }] : [];
}

/** Why the pipe's slot cannot carry on from its position on this connection's server, or undefined. */
async function slotHere(
  client: pg.Client,
  cursor: Cursor,
  database: string,
  where: string,
): Promise<string | undefined> {
  const slot = cursor.slot as string;
  const owner = await client.query<{ database: string }>(
    'SELECT database FROM pg_replication_slots WHERE slot_name = $1',
    [slot],
  );
  const state = await slotState(client, slot);
  if (!state || !owner.rows[0]) return `the replication slot ${pgLiteral(slot)} is not on ${where}`;
  if (owner.rows[0].database !== database) {
    return `the pipe's replication slot ${pgLiteral(slot)} belongs to the database ${pgLiteral(owner.rows[0].database)}, not ${pgLiteral(database)}`;
  }
  const lost = slotProblem(slot, state, 'it cannot stream again');
  if (lost) return lost;
  if (cursor.phase === 'cdc' && state.confirmedLsn && parseLsn(state.confirmedLsn) > parseLsn(cursor.lsn)) {
    return `the replication slot ${pgLiteral(slot)} on ${where} is past the pipe's position (${state.confirmedLsn}, the pipe is at ${cursor.lsn}): the changes between are gone there`;
  }
  return undefined;
}

/** The system identifier of the server a pipe read from, when it still answers. */
async function identityAt(source: PostgresSource, context: ChangeContext): Promise<string | undefined> {
  let client: pg.Client;
  try {
    client = await connect(source, context);
  } catch (error) {
    context.logger?.debug({ err: error, host: source.host }, 'the previous server does not answer');
    return undefined;
  }
  try {
    return await systemIdentifier(client, source, context);
  } finally {
    await closeClient(client, context.logger);
  }
}
