import type { BadRecord } from './bad-records.js';

/**
 * What reading (part of) a batch's range handed the engine: the rows loaded into the batch's
 * tables, as the source counted what it read less what it set aside, and the records set aside.
 * The runtime holds the rows against what its stages hold before it moves them
 * (src/pipes/runtime/batch.ts).
 */
export interface RangeRead {
  rows: number;
  badRecords: BadRecord[];
  /**
   * When the oldest record read was made at its source (ms since the epoch: a message's
   * timestamp, a record's arrival), for the pipe's history; absent when the source does not say.
   */
  oldestAt?: number;
}

/** The reads of a range's parts, as one. */
export function rangeRead(parts: readonly RangeRead[]): RangeRead {
  const times = parts.flatMap((part) => (part.oldestAt === undefined ? [] : [part.oldestAt]));
  return {
    rows: parts.reduce((sum, part) => sum + part.rows, 0),
    badRecords: parts.flatMap((part) => part.badRecords),
    ...(times.length > 0 ? { oldestAt: Math.min(...times) } : {}),
  };
}
