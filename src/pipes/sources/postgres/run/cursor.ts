import type { TablePlan } from '../catalog/index.js';
import type { TableRanges } from '../snapshot/index.js';

/** Where a database pipe is (the progress row's cursor). */
export interface Cursor {
  phase: 'snapshot' | 'cdc';
  /**
   * The system identifier of the server the pipe was set up on (session/server-identity.ts): a new
   * address is taken only when it reaches the same server (checks/change-checks.ts). Absent in older cursors.
   */
  server?: string;
  slot: string | null;
  publication: string | null;
  /** Changes: the end of the last claimed transaction; the snapshot: the slot's consistent point. */
  lsn: string;
  /** Of a large transaction after `lsn` read in pieces (changes/positions.ts), the changes claimed. */
  partial?: PartialLsn;
  tables: Record<string, TableRanges>;
  /** The target tables mapped when the cursor was set: one mapped later needs its snapshot. */
  mapped: string[];
  /**
   * A resync under way: its snapshot fills fresh tables, swapped in for the targets when done.
   * `setUp` false: asked for and stored, its slot not made yet (a retry makes it).
   */
  resync?: { startedAt: string; setUp: boolean };
}

/** A large transaction's commit position, and how far into its changes (changes/positions.ts). */
export interface PartialLsn {
  txn: string;
  through: string;
}

/**
 * A batch of changes: the transactions ending in (from, to], and of a large transaction read in
 * pieces, the changes after `fromPartial` and up to `toPartial` (changes/positions.ts).
 */
export interface ChangesRange {
  kind: 'changes';
  from: string;
  to: string;
  changes: number;
  fromPartial?: PartialLsn;
  toPartial?: PartialLsn;
}

/**
 * The target holds nothing but rows of its snapshot, each key once: its snapshot is under way
 * (changes follow only once every table's is done), it is not a resync's (whose counts are of the
 * old target, changes and all), and its key is the source's primary key.
 */
export function holdsOnlySnapshot(
  cursor: Cursor,
  plan: TablePlan,
  inFlightByTable: ReadonlyMap<string, number>,
): boolean {
  const target = plan.mapping.targetTable;
  const ranges = cursor.tables[target];
  if (cursor.phase !== 'snapshot' || cursor.resync || !plan.keysUnique || !ranges) return false;
  return ranges.next < ranges.ranges || (inFlightByTable.get(target) ?? 0) > 0;
}
