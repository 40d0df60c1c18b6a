import type pg from 'pg';
import { CodedError } from '../../../../errors.js';
import { parseLsn } from './lsn.js';

/**
 * What a snapshot saw, as PostgreSQL's `txid_current_snapshot()` tells it: transactions below
 * `xmin` had ended, those from `xmax` on had not begun, and those in `xip` were running. Each is a
 * 64-bit transaction id (epoch and xid), kept as text in the pipe's cursor. `lsn` is where WAL
 * was being inserted when it was taken (`pg_current_wal_insert_lsn()`, not the written position,
 * which an asynchronous commit may be ahead of): a transaction whose commit record comes later
 * cannot be one it saw.
 */
export interface SeenBy {
  xmin: string;
  xmax: string;
  xip: string[];
  lsn: string;
}

/**
 * Exports the snapshot of `holder`'s transaction (REPEATABLE READ, begun) for other sessions to
 * read under, and says what it saw.
 */
export async function exportSeenSnapshot(holder: pg.Client): Promise<{ name: string; seen: SeenBy }> {
  const result = await holder.query<{ name: string; seen: string; lsn: string }>(
    'SELECT pg_export_snapshot() AS name, txid_current_snapshot()::text AS seen, pg_current_wal_insert_lsn()::text AS lsn',
  );
  const row = result.rows[0];
  const match = /^(\d+):(\d+):([\d,]*)$/.exec(row?.seen ?? '');
  if (!row || !match)
    throw new CodedError(
      'SLUICE_ERR_SOURCE_PROTOCOL',
      `PostgreSQL described its snapshot as "${row?.seen}", not xmin:xmax:xip`,
    );
  const [, xmin = '', xmax = '', xip = ''] = match;
  return { name: row.name, seen: { xmin, xmax, xip: xip ? xip.split(',') : [], lsn: row.lsn } };
}

const EPOCH = 1n << 32n;

/**
 * Whether a snapshot saw what a transaction did: it had committed before the snapshot was taken.
 * One that commits after the snapshot's WAL position did not; for one before it (so within a few
 * transactions of the snapshot), pgoutput's 32-bit xid gets the epoch that puts it nearest the
 * snapshot's `xmax`.
 */
export function sawTransaction(seen: SeenBy, transaction: { xid: number; finalLsn: bigint }): boolean {
  if (transaction.finalLsn > parseLsn(seen.lsn)) return false;
  const xmax = BigInt(seen.xmax);
  let full = (xmax / EPOCH) * EPOCH + BigInt(transaction.xid >>> 0);
  if (full - xmax > EPOCH / 2n) full -= EPOCH;
  else if (xmax - full > EPOCH / 2n) full += EPOCH;
  if (full < BigInt(seen.xmin)) return true;
  return full < xmax && !seen.xip.includes(String(full));
}
