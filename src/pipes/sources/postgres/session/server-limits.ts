import type pg from 'pg';
import type { Problem } from '../../../../errors.js';
import type { PostgresSource } from './connection.js';

const PATH = 'source.postgres';

/**
 * Sessions a run holds besides its snapshot's ranges: its own (catalog, slot position) and the one
 * that holds the exported snapshot (a replication connection in cdc mode, which PostgreSQL 12 and
 * later keep out of max_connections; counted anyway, the safe side by one).
 */
const RUN_SESSIONS = 2;

/**
 * What the server's limits leave a pipe, checked at create: fewer sessions than a run needs to
 * read one range, or no free slot to make, and the pipe can never run. Fewer sessions than
 * `initialLoadParallelism` asks for are no reason to refuse: the snapshot reads on as many as the
 * server gives (snapshot/snapshot-sessions.ts).
 */
export async function limitProblems(
  client: pg.Client,
  source: PostgresSource,
  mode: string,
): Promise<Problem[]> {
  const problems: Problem[] = [];
  if (mode !== 'cdc_only') {
    const problem = await sessionProblem(client);
    if (problem) problems.push(problem);
  }
  if (mode !== 'snapshot') problems.push(...(await slotProblems(client, source, mode)));
  return problems;
}

export interface ServerLimits {
  maxConnections: number;
  superuserReserved: number;
  reserved: number;
  superuser: boolean;
  mayUseReserved: boolean;
  roleLimit: number;
  databaseLimit: number;
}

async function sessionProblem(client: pg.Client): Promise<Problem | undefined> {
  const { rows } = await client.query<ServerLimits>(
    `SELECT current_setting('max_connections')::int AS "maxConnections",
            current_setting('superuser_reserved_connections')::int AS "superuserReserved",
            coalesce(current_setting('reserved_connections', true), '0')::int AS reserved,
            r.rolsuper AS superuser, r.rolconnlimit AS "roleLimit",
            (SELECT datconnlimit FROM pg_database WHERE datname = current_database()) AS "databaseLimit",
            CASE WHEN to_regrole('pg_use_reserved_connections') IS NULL THEN false
                 ELSE pg_has_role(current_user, to_regrole('pg_use_reserved_connections'), 'USAGE') END
              AS "mayUseReserved"
       FROM pg_roles r WHERE r.rolname = current_user`,
  );
  const limits = rows[0];
  if (!limits) return undefined;
  const allowed = sessionsAllowed(limits);
  const needed = RUN_SESSIONS + 1;
  if (allowed.sessions >= needed) return undefined;
  return {
    path: `${PATH}.${allowed.field}`,
    message: `a pipe needs at least ${needed} sessions (its own ${RUN_SESSIONS} and one to read the snapshot on), and ${allowed.why}: raise it`,
  };
}

/**
 * How many sessions the server ever lets this user open in this database, the limit that says so
 * and the field a user fixes it through. The sessions of other clients are not counted.
 */
export function sessionsAllowed(limits: ServerLimits): {
  sessions: number;
  why: string;
  field: 'host' | 'credentials' | 'database';
} {
  const reserved = limits.superuser
    ? 0
    : limits.superuserReserved + (limits.mayUseReserved ? 0 : limits.reserved);
  let allowed = {
    sessions: limits.maxConnections - reserved,
    why:
      reserved > 0
        ? `the server allows this user ${limits.maxConnections - reserved} (max_connections ${limits.maxConnections} less ${reserved} reserved)`
        : `the server allows ${limits.maxConnections} (max_connections)`,
    field: 'host' as 'host' | 'credentials' | 'database',
  };
  // A superuser is held to neither CONNECTION LIMIT.
  if (limits.superuser) return allowed;
  if (limits.roleLimit >= 0 && limits.roleLimit < allowed.sessions) {
    allowed = {
      sessions: limits.roleLimit,
      why: `the user's CONNECTION LIMIT is ${limits.roleLimit}`,
      field: 'credentials',
    };
  }
  if (limits.databaseLimit >= 0 && limits.databaseLimit < allowed.sessions) {
    allowed = {
      sessions: limits.databaseLimit,
      why: `the database's CONNECTION LIMIT is ${limits.databaseLimit}`,
      field: 'database',
    };
  }
  return allowed;
}

/**
 * A slot to create needs a free one, and replication a WAL sender. All slots taken is the server's
 * state now, not a fixed limit, but slots are not freed by waiting: someone must drop one.
 */
async function slotProblems(client: pg.Client, source: PostgresSource, mode: string): Promise<Problem[]> {
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
  const takesNamed = mode === 'cdc_only' && row.namedExists;
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
