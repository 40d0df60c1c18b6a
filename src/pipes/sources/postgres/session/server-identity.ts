import type pg from 'pg';
import type { Logger } from 'pino';
import { closeClient, connect, type PostgresSource } from './connection.js';

/** SQLSTATE insufficient_privilege. */
const NOT_ALLOWED = '42501';

/**
 * The server's system identifier: the same on a server and its physical standbys (a failover keeps
 * it), another on any other server, even one restored from a dump. Read with
 * `pg_control_system()`, or, where the user may not call it, the replication protocol's
 * IDENTIFY_SYSTEM (a replicating user may); undefined when neither is allowed.
 */
export async function systemIdentifier(
  client: pg.Client,
  source: PostgresSource,
  context: { allowPrivateSources: boolean; logger?: Logger },
): Promise<string | undefined> {
  // Asked first, not tried: the connection may be inside a transaction (a snapshot's), which an
  // error would abort for every statement after it.
  const allowed = await client.query<{ may: boolean }>(
    "SELECT has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE') AS may",
  );
  if (allowed.rows[0]?.may) {
    const result = await client.query<{ id: string }>(
      'SELECT system_identifier::text AS id FROM pg_control_system()',
    );
    return result.rows[0]?.id;
  }
  if ((source.settings?.replicationMode ?? 'cdc') === 'snapshot') return undefined;
  const replication = await connect(source, context, { replication: true });
  try {
    const result = await replication.query<{ systemid: string }>('IDENTIFY_SYSTEM');
    return result.rows[0]?.systemid;
  } catch (error) {
    if ((error as { code?: string }).code === NOT_ALLOWED) return undefined;
    throw error;
  } finally {
    await closeClient(replication, context.logger);
  }
}
