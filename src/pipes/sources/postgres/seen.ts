import type pg from 'pg';

/**
 * What a snapshot saw, as PostgreSQL's `txid_current_snapshot()` tells it: transactions below
 * `xmin` had ended, those from `xmax` on had not begun, and those in `xip` were running. Each is a
 * 64-bit transaction id (epoch and xid), kept as text in the pipe's cursor.
 */
export interface SeenBy {
  xmin: string;
  xmax: string;
  xip: string[];
}

/**
 * Exports the snapshot of `holder`'s transaction (REPEATABLE READ, begun) for other sessions to
 * read under, and says what it saw.
 */
export async function exportSeenSnapshot(holder: pg.Client): Promise<{ name: string | null; seen: SeenBy }> {
  const result = await holder.query<{ name: string; seen: string }>(
    'SELECT pg_export_snapshot() AS name, txid_current_snapshot()::text AS seen',
  );
  const row = result.rows[0];
  const [xmin = '0', xmax = '0', xip = ''] = (row?.seen ?? '0:0:').split(':');
  return { name: row?.name ?? null, seen: { xmin, xmax, xip: xip ? xip.split(',') : [] } };
}

const EPOCH = 1n << 32n;

/**
 * Whether a snapshot saw what the transaction `xid` (pgoutput's 32 bits) did: it had committed
 * before the snapshot was taken. The xid gets the epoch that puts it nearest the snapshot's
 * `xmax` (a transaction the slot replays is never 2^31 transactions away from it).
 */
export function sawTransaction(seen: SeenBy, xid: number): boolean {
  const xmax = BigInt(seen.xmax);
  let full = (xmax / EPOCH) * EPOCH + BigInt(xid >>> 0);
  if (full - xmax > EPOCH / 2n) full -= EPOCH;
  else if (xmax - full > EPOCH / 2n) full += EPOCH;
  if (full < BigInt(seen.xmin)) return true;
  return full < xmax && !seen.xip.includes(String(full));
}
