import type { Claim, Json } from '../../contract.js';
import { takeAfterMs, type WriteTiming } from '../../messages/index.js';
import type { ChangeStream, Transaction } from '../changes/index.js';
import { cursorPosition, positionAfter, stored } from '../changes/index.js';
import type { PostgresSource } from '../session/index.js';
import { rangeAt, snapshotParallelism } from '../snapshot/index.js';
import type { ChangesRange, Cursor } from './cursor.js';

type Settings = NonNullable<PostgresSource['settings']>;

/**
 * The snapshot's next range to claim, if one may start now: `initialLoadParallelism` ranges of a
 * table at once, `snapshotNumberOfParallelTables` tables at once. The caller counts it in flight.
 */
export function claimRange(
  cursor: Cursor,
  settings: Settings,
  inFlightByTable: ReadonlyMap<string, number>,
): { claim: Claim; table: string } | undefined {
  const { perTable, tablesAtOnce } = snapshotParallelism(settings);
  const busy = [...inFlightByTable].filter(([, n]) => n > 0).map(([t]) => t);
  for (const [table, ranges] of Object.entries(cursor.tables)) {
    if (ranges.next >= ranges.ranges) continue;
    const active = busy.includes(table);
    if (!active && busy.length >= tablesAtOnce) continue;
    if ((inFlightByTable.get(table) ?? 0) >= perTable) continue;
    const range = rangeAt(table, ranges, ranges.next);
    const tables = { ...cursor.tables, [table]: { ...ranges, next: ranges.next + 1 } };
    const claim = {
      range: range as unknown as Json,
      files: 0,
      bytes: 0,
      skipped: [],
      cursor: { ...cursor, tables } as unknown as Json,
    };
    return { claim, table };
  }
  return undefined;
}

/**
 * The next batch of changes, once `pullBatchSize` changes wait or the oldest has waited long
 * enough; 'idle' before. `syncIntervalSeconds` bounds how long a change waits to be visible, so
 * the batch is taken as much earlier as recent batches took to write (takeAfterMs in
 * src/pipes/sources/messages/visible-within.ts, which Kafka and Kinesis flushes share).
 */
export function claimChanges(
  stream: ChangeStream,
  cursor: Cursor,
  settings: Settings,
  timing: WriteTiming,
): Claim | 'idle' {
  // What the store committed before the slot heard of it comes again after a restart: it is done.
  const done = cursorPosition(cursor);
  stream.takeRange(done, done);
  if (stream.ready.length === 0) return 'idle';
  const limit = settings.pullBatchSize ?? 100_000;
  const intervalMs = (settings.syncIntervalSeconds ?? 60) * 1000;
  const waitMs = takeAfterMs(intervalMs, timing);
  const pending = stream.ready.reduce((n, t) => n + t.changes.length, 0);
  const oldest = (stream.ready[0] as Transaction).receivedAt;
  // A piece of a large transaction is as many changes as it is worth waiting for.
  const piece = stream.ready.some((t) => t.through !== undefined);
  if (pending < limit && !piece && Date.now() - oldest < waitMs) return 'idle';
  let changes = 0;
  let bytes = 0;
  const taken: Transaction[] = [];
  for (const transaction of stream.ready) {
    if (taken.length > 0 && changes + transaction.changes.length > limit) break;
    changes += transaction.changes.length;
    bytes += transaction.bytes;
    taken.push(transaction);
  }
  const to = stored(positionAfter(done, taken));
  const range: ChangesRange = {
    kind: 'changes',
    from: cursor.lsn,
    to: to.lsn,
    changes,
    fromPartial: cursor.partial,
    toPartial: to.partial,
  };
  return {
    range: range as unknown as Json,
    files: 0,
    bytes,
    skipped: [],
    cursor: { ...cursor, phase: 'cdc', lsn: to.lsn, partial: to.partial } as unknown as Json,
  };
}
