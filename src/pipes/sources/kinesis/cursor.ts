import { instantOf } from '../../model.js';
import type { KinesisSource } from './client.js';
import type { StartAt } from './shard-host.js';

/** Where a Kinesis pipe is (the progress row's cursor). */
export interface KinesisCursor {
  /** When the pipe first read, in milliseconds: LATEST means the records that arrived after it. */
  startedAt: number;
  /** The shards listed when the pipe first read: LATEST reads those from their tip, later ones whole. */
  firstShards?: string[];
  /** Per shard, the last sequence number claimed. */
  shards: Record<string, string>;
}

/** A batch's range: per shard, the records from `first` to `last` (sequence numbers, inclusive). */
export interface KinesisRange {
  parts: { shard: string; first: string; last: string; records: number }[];
}

/**
 * Where a shard starts: after the last record claimed from it; else as `iteratorType` says. For
 * LATEST that is the tip only on the pipe's first run and only for the shards open then: a shard
 * made later by a split or a merge is read whole, and one not claimed from before a restart is
 * read from the time the pipe first read, so nothing that arrived since is lost.
 */
export function startOf(
  source: KinesisSource,
  cursor: KinesisCursor,
  shard: string,
  firstRun: boolean,
): StartAt {
  const claimed = cursor.shards[shard];
  if (claimed) return { type: 'AFTER_SEQUENCE_NUMBER', sequence: claimed };
  switch (source.iteratorType ?? 'TRIM_HORIZON') {
    case 'LATEST':
      if (!cursor.firstShards?.includes(shard)) return { type: 'TRIM_HORIZON' };
      return firstRun ? { type: 'LATEST' } : { type: 'AT_TIMESTAMP', at: new Date(cursor.startedAt) };
    case 'AT_TIMESTAMP':
      return { type: 'AT_TIMESTAMP', at: instantOf(source.timestamp ?? 0) };
    default:
      return { type: 'TRIM_HORIZON' };
  }
}
