import type pg from 'pg';
import type { Logger } from 'pino';
import { PermanentError } from '../../records/index.js';
import type { RunContext } from '../contract.js';
import { closeClient, connect, type PostgresSource, pgIdent, pgLiteral, pgTable } from './connection.js';
import type { Cursor } from './cursor.js';
import { slotFix, slotProblem, slotState } from './slot.js';
import { planRanges, type TableRanges } from './snapshot.js';
import type { TablePlan } from './tables.js';

/** The slot and publication names a pipe owns (Sluice makes and drops them). */
export function ownedNames(pipeId: string): { slot: string; publication: string } {
  const name = `pipes_${pipeId.replace(/-/g, '')}`;
  return { slot: name, publication: name };
}

/** The publication to stream from: the one given (it must exist), else the pipe's own, made now. */
export async function ensurePublication(
  client: pg.Client,
  source: PostgresSource,
  pipeId: string,
): Promise<string> {
  const given = source.settings?.publicationName;
  if (given) return given;
  const name = ownedNames(pipeId).publication;
  const found = await client.query('SELECT 1 FROM pg_publication WHERE pubname = $1', [name]);
  // A partitioned table's changes are its partitions': published as the partitioned table's, they
  // reach its mapping (PostgreSQL 13 and later; the create checks refuse one before). Another
  // table is published without the tables that inherit from it, as its snapshot reads it.
  const partitioned = new Set(await partitionedTables(client, source));
  const tables = source.tableMappings.map((m) => {
    const schema = m.sourceSchemaName ?? 'public';
    const only = partitioned.has(`${schema}.${m.sourceTable}`) ? '' : 'ONLY ';
    return `${only}${pgTable(schema, m.sourceTable)}`;
  });
  const viaRoot = partitioned.size > 0;
  if (found.rowCount === 0) {
    const options = viaRoot ? ' WITH (publish_via_partition_root = true)' : '';
    await client.query(`CREATE PUBLICATION ${pgIdent(name)} FOR TABLE ${tables.join(', ')}${options}`);
  } else {
    // Table mappings changed while stopped: the publication follows them.
    await client.query(`ALTER PUBLICATION ${pgIdent(name)} SET TABLE ${tables.join(', ')}`);
    if (viaRoot)
      await client.query(`ALTER PUBLICATION ${pgIdent(name)} SET (publish_via_partition_root = true)`);
  }
  return name;
}

/** The mapped tables that are partitioned, each as `schema.table`. */
export async function partitionedTables(client: pg.Client, source: PostgresSource): Promise<string[]> {
  const result = await client.query<{ name: string }>(
    `SELECT format('%s.%s', n.nspname, c.relname) AS name
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind = 'p' AND (n.nspname, c.relname) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
    [
      source.tableMappings.map((m) => m.sourceSchemaName ?? 'public'),
      source.tableMappings.map((m) => m.sourceTable),
    ],
  );
  return result.rows.map((r) => r.name);
}

/**
 * Why a publication the user named cannot send the mapped tables' changes as the pipe reads them,
 * with the fix; undefined when it can. It must cover every mapped table, and send a partitioned
 * table's changes as its own (else they come under its partitions' names, which no mapping has).
 */
export async function publicationProblem(
  client: pg.Client,
  publication: string,
  source: PostgresSource,
): Promise<string | undefined> {
  const options = await client.query<{ via_root: boolean }>(
    `SELECT coalesce((to_jsonb(p) ->> 'pubviaroot')::bool, false) AS via_root FROM pg_publication p WHERE pubname = $1`,
    [publication],
  );
  const partitioned = options.rows[0]?.via_root ? [] : await partitionedTables(client, source);
  if (partitioned.length > 0) {
    return `the publication ${publication} sends the changes of ${partitioned.join(', ')} under the names of its partitions: ALTER PUBLICATION ${pgIdent(publication)} SET (publish_via_partition_root = true)`;
  }
  const result = await client.query<{ schemaname: string; tablename: string }>(
    'SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = $1',
    [publication],
  );
  const covered = new Set(result.rows.map((r) => `${r.schemaname}.${r.tablename}`));
  const missing = source.tableMappings.filter(
    (m) => !covered.has(`${m.sourceSchemaName ?? 'public'}.${m.sourceTable}`),
  );
  if (missing.length === 0) return undefined;
  const names = missing.map((m) => `${m.sourceSchemaName ?? 'public'}.${m.sourceTable}`);
  const tables = missing.map((m) => pgTable(m.sourceSchemaName ?? 'public', m.sourceTable));
  return `the publication ${publication} does not cover ${names.join(', ')}: ALTER PUBLICATION ${pgIdent(publication)} ADD TABLE ${tables.join(', ')}`;
}

/** A replication connection holding a new slot's exported snapshot until it is closed. */
export interface CreatedSlot {
  consistentLsn: string;
  snapshotName: string | null;
  /** Keeps the snapshot alive: it lasts until this connection runs anything else or closes. */
  holder: pg.Client | null;
}

/**
 * Creates a pgoutput slot. With `exportSnapshot`, the snapshot of the slot's consistent point stays
 * usable (SET TRANSACTION SNAPSHOT) by other sessions while `holder` stays open and idle.
 */
export async function createSlot(
  source: PostgresSource,
  context: { allowPrivateSources: boolean; logger?: Logger },
  slot: string,
  exportSnapshot: boolean,
): Promise<CreatedSlot> {
  const holder = await connect(source, context, { replication: true });
  try {
    const result = await holder.query<{ consistent_point: string; snapshot_name: string | null }>(
      `CREATE_REPLICATION_SLOT ${pgIdent(slot)} LOGICAL pgoutput ${exportSnapshot ? 'EXPORT_SNAPSHOT' : 'NOEXPORT_SNAPSHOT'}`,
    );
    const row = result.rows[0];
    if (!row) throw new Error('the server did not describe the new replication slot');
    if (!exportSnapshot) {
      await holder.end();
      return { consistentLsn: row.consistent_point, snapshotName: null, holder: null };
    }
    return { consistentLsn: row.consistent_point, snapshotName: row.snapshot_name, holder };
  } catch (error) {
    await closeClient(holder, context.logger);
    throw error;
  }
}

export async function dropSlot(client: pg.Client, slot: string): Promise<void> {
  await client.query(
    'SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1',
    [slot],
  );
}

/**
 * Drops what Sluice made for a deleted pipe: its slot (waiting a little for a stream that is
 * still closing) and its own publication. A user's named slot and publication stay. Throws when
 * the server cannot be reached or refuses: the runtime tries again later (source-cleanups.ts),
 * since a slot left behind keeps the server's WAL from being recycled.
 */
export async function dropOwned(
  source: PostgresSource,
  context: { pipeId: string; allowPrivateSources: boolean; logger: Logger },
): Promise<void> {
  const { slot, publication } = ownedNames(context.pipeId);
  let client: pg.Client | undefined;
  try {
    client = await connect(source, context);
    for (let attempt = 0; ; attempt += 1) {
      try {
        await dropSlot(client, slot);
        break;
      } catch (error) {
        // 55006: the slot is still active (the stream's connection is closing).
        if ((error as { code?: string }).code !== '55006' || attempt >= 20) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    await client.query(`DROP PUBLICATION IF EXISTS ${pgIdent(publication)}`);
  } catch (error) {
    throw new Error(
      `PostgreSQL: could not drop the replication slot ${pgLiteral(slot)} or the publication ${pgIdent(publication)} (${error instanceof Error ? error.message : String(error)})`,
      { cause: error },
    );
  } finally {
    if (client) await closeClient(client, context.logger);
  }
}

/** What setting a pipe up needs of its run. */
export interface SetUpHost {
  context: RunContext;
  source: PostgresSource;
  meta: pg.Client;
  plans: ReadonlyMap<string, TablePlan>;
}

/**
 * Sets a pipe up (state Setup): the snapshot's ranges, and for `cdc` and `cdc_only` the
 * publication and a slot (`cdc` with an exported snapshot the ranges read under; a given slot of
 * `cdc_only` that exists is taken as it is). `snapshot` (one-off) makes no slot: the run exports a
 * snapshot of its own (`exportSnapshot`).
 */
export async function setUpPipe(
  host: SetUpHost,
  mode: string,
): Promise<{ cursor: Cursor; created?: CreatedSlot; exportSnapshot?: true }> {
  const { context, source, meta, plans } = host;
  const tables: Record<string, TableRanges> = {};
  const rowsPerRange = source.settings?.snapshotNumRowsPerPartition ?? 100_000;
  for (const [target, plan] of plans) tables[target] = planRanges(plan.source, rowsPerRange);
  const mapped = [...plans.keys()];
  if (mode === 'snapshot') {
    const cursor: Cursor = { phase: 'snapshot', slot: null, publication: null, lsn: '0/0', tables, mapped };
    return { cursor, exportSnapshot: true };
  }
  const publication = await ensurePublication(meta, source, context.pipeId);
  const given = mode === 'cdc_only' ? source.settings?.replicationSlotName : undefined;
  const slot = given ?? ownedNames(context.pipeId).slot;
  const existing = await slotState(meta, slot);
  if (given && existing) {
    // A given slot the server invalidated cannot be taken: nothing is emptied or set up.
    const problem = slotProblem(slot, existing, slotFix('cdc_only', false));
    if (problem) throw new PermanentError(problem);
    return {
      cursor: { phase: 'cdc', slot, publication, lsn: existing.confirmedLsn ?? '0/0', tables: {}, mapped },
    };
  }
  // A slot of ours without progress is a setup that did not finish: it starts again.
  if (existing) await dropSlot(meta, slot);
  const created = await createSlot(source, context, slot, mode === 'cdc');
  const lsn = created.consistentLsn;
  const cursor: Cursor =
    mode === 'cdc_only'
      ? { phase: 'cdc', slot, publication, lsn, tables: {}, mapped }
      : { phase: 'snapshot', slot, publication, lsn, tables, mapped };
  return { cursor, created };
}
