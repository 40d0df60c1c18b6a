import type pg from 'pg';
import { pgLiteral } from '../session/index.js';

/**
 * Whether the server still keeps the WAL a slot needs (`pg_replication_slots.wal_status`,
 * PostgreSQL 13 and later): `reserved` and `extended` keep it, `unreserved` loses it at the next
 * checkpoint, `lost` has lost it and can never stream again.
 */
export type SlotWalStatus = 'reserved' | 'extended' | 'unreserved' | 'lost';

/** What the server says of a slot that exists. */
export interface SlotState {
  confirmedLsn: string | null;
  /** WAL bytes the slot's confirmed position is behind the server's; null when unknown. */
  lagBytes: number | null;
  /** Null before PostgreSQL 13. */
  walStatus: SlotWalStatus | null;
  /** Why the server invalidated it (`wal_removed`, `rows_removed`, ...; PostgreSQL 17 and later). */
  invalidation: string | null;
}

/** The slot as the server has it, or undefined when there is no such slot. */
export async function slotState(client: pg.Client, slot: string): Promise<SlotState | undefined> {
  // Columns a later version added are read from the row as JSON, so an older server answers null.
  const result = await client.query<{
    lsn: string | null;
    lag: string | null;
    wal_status: SlotWalStatus | null;
    invalidation: string | null;
  }>(
    `SELECT s.confirmed_flush_lsn::text AS lsn,
            pg_wal_lsn_diff(pg_current_wal_lsn(), s.confirmed_flush_lsn)::text AS lag,
            to_jsonb(s) ->> 'wal_status' AS wal_status, to_jsonb(s) ->> 'invalidation_reason' AS invalidation
       FROM pg_replication_slots s WHERE s.slot_name = $1`,
    [slot],
  );
  const row = result.rows[0];
  if (!row) return undefined;
  return {
    confirmedLsn: row.lsn,
    lagBytes: row.lag === null ? null : Number(row.lag),
    walStatus: row.wal_status,
    invalidation: row.invalidation,
  };
}

/**
 * Why a slot can never stream again, or undefined: it is gone (dropped at the source), or the
 * server invalidated it. `fix` says what brings the pipe back (slotFix).
 */
export function slotProblem(slot: string, state: SlotState | undefined, fix: string): string | undefined {
  const name = `the replication slot ${pgLiteral(slot)}`;
  if (!state) return `${name} no longer exists at the source: ${fix}`;
  if (state.walStatus !== 'lost' && state.invalidation === null) return undefined;
  const why =
    state.invalidation === null || state.invalidation === 'wal_removed'
      ? 'the WAL it needed is removed (most often it fell more than max_slot_wal_keep_size behind: do not leave a pipe stopped long, or raise that setting)'
      : `the server gives the reason ${pgLiteral(state.invalidation)}`;
  return `${name} was invalidated by the server: ${why}. Now ${fix}`;
}

/** What brings back a pipe whose slot is unusable, by what its resync does in its mode. */
export function slotFix(mode: string, owned: boolean): string {
  const resync =
    mode === 'cdc_only'
      ? 'resync the pipe: it makes the slot again and empties the targets, which follow the changes from then on (earlier rows are not copied)'
      : 'resync the pipe: it makes a new slot and copies the tables again';
  return owned ? resync : `drop the slot at the source if it is still there, then ${resync}`;
}
