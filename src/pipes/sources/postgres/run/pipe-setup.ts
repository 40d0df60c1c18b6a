import type pg from 'pg';
import type { Logger } from 'pino';
import { CodedError } from '../../../../errors.js';
import { PermanentError } from '../../../records/index.js';
import type { RunContext } from '../../contract.js';
import type { TablePlan } from '../catalog/index.js';
import { ensurePublication } from '../catalog/index.js';
import { slotFix, slotProblem, slotState } from '../changes/index.js';
import {
  closeClient,
  connect,
  ownedNames,
  type PostgresSource,
  pgIdent,
  pgLiteral,
  systemIdentifier,
} from '../session/index.js';
import { planRanges, type TableRanges } from '../snapshot/index.js';
import type { Cursor } from './cursor.js';

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
    if (!row)
      throw new CodedError(
        'SLUICE_ERR_SOURCE_PROTOCOL',
        'the server did not describe the new replication slot',
      );
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
    throw new CodedError(
      'SLUICE_ERR_SOURCE_CLEANUP',
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
  const server = await systemIdentifier(meta, source, context);
  if (mode === 'snapshot') {
    const cursor: Cursor = {
      phase: 'snapshot',
      server,
      slot: null,
      publication: null,
      lsn: '0/0',
      tables,
      mapped,
    };
    return { cursor, exportSnapshot: true };
  }
  const publication = await ensurePublication(meta, source, context.pipeId);
  const given = mode === 'cdc_only' ? source.settings?.replicationSlotName : undefined;
  const slot = given ?? ownedNames(context.pipeId).slot;
  const existing = await slotState(meta, slot);
  if (given && existing) {
    // A given slot the server invalidated cannot be taken: nothing is emptied or set up.
    const problem = slotProblem(slot, existing, slotFix('cdc_only', false));
    if (problem) throw new PermanentError('SLUICE_ERR_SOURCE_SETUP', problem);
    return {
      cursor: {
        phase: 'cdc',
        server,
        slot,
        publication,
        lsn: existing.confirmedLsn ?? '0/0',
        tables: {},
        mapped,
      },
    };
  }
  // A slot of ours without progress is a setup that did not finish: it starts again.
  if (existing) await dropSlot(meta, slot);
  const created = await createSlot(source, context, slot, mode === 'cdc');
  const lsn = created.consistentLsn;
  const cursor: Cursor =
    mode === 'cdc_only'
      ? { phase: 'cdc', server, slot, publication, lsn, tables: {}, mapped }
      : { phase: 'snapshot', server, slot, publication, lsn, tables, mapped };
  return { cursor, created };
}
