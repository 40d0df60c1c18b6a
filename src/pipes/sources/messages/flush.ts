import type { PipeConfig } from '../../model.js';
import { takeAfterMs, type WriteTiming } from './visible-within.js';

/**
 * When a stream's held messages become a batch (README, "How a Kafka pipe runs", Flush): at
 * 100,000 messages, 32 MB of message bytes, or early enough for the oldest waiting message to be
 * visible within `streaming_max_insert_wait_ms` (default 5 s; visible-within.ts) once the run has
 * caught up with its source (a backlog's batches take the whole wait); a run's first
 * batch waits FIRST_WAIT_MS at most, and not at all once it holds the first batch's limits, so a
 * new pipe's first rows are visible within a second rather than after the whole wait or a full
 * batch.
 */
export interface StreamFlush {
  rows: number;
  bytes: number;
  waitMs: number;
}

/** The longest a run's first batch waits for more messages. */
export const FIRST_WAIT_MS = 300;
/** The most a run's first batch takes: a backlog's first rows load in a fraction of a second. */
const FIRST_LIMITS = { rows: 10_000, bytes: 4 * 1024 * 1024 };

const DEFAULT_FLUSH: StreamFlush = { rows: 100_000, bytes: 32 * 1024 * 1024, waitMs: 5_000 };

export function streamFlush(config: PipeConfig): StreamFlush {
  return { ...DEFAULT_FLUSH, waitMs: config.settings.streaming_max_insert_wait_ms ?? DEFAULT_FLUSH.waitMs };
}

/** What a partition or a shard holds for the next batch. */
export interface HeldMessages {
  messages: { length: number };
  bytes: number;
  /** When the oldest held message arrived; undefined when none is held. */
  since: number | undefined;
  /** The source holds more than was read: the held messages are late already. */
  behind?: boolean;
}

/**
 * Whether these partitions' or shards' held messages make a batch now; `first` when the run has
 * claimed no batch yet; `timing` what recent batches took to be written (visible-within.ts).
 */
export function flushDue(
  held: readonly HeldMessages[],
  flush: StreamFlush,
  timing: WriteTiming,
  first = false,
): boolean {
  if (held.length === 0) return false;
  const rows = held.reduce((n, h) => n + h.messages.length, 0);
  const bytes = held.reduce((n, h) => n + h.bytes, 0);
  const oldest = Math.min(...held.map((h) => h.since ?? Number.POSITIVE_INFINITY));
  // Messages of a backlog are late whatever their batch: the whole wait's worth catches up faster.
  const caughtUp = !held.some((h) => h.behind);
  const waitMs = first
    ? Math.min(flush.waitMs, FIRST_WAIT_MS)
    : caughtUp
      ? takeAfterMs(flush.waitMs, timing)
      : flush.waitMs;
  // The first batch takes no more than batchLimits' first share: once that is held (a backlog's
  // first fetch), waiting longer would only delay the first rows.
  const limits = batchLimits(flush, first);
  return rows >= limits.rows || bytes >= limits.bytes || Date.now() - oldest >= waitMs;
}

/** How much one batch may take: less for a run's first, so its rows are visible sooner. */
export function batchLimits(flush: StreamFlush, first: boolean): { rows: number; bytes: number } {
  if (!first) return { rows: flush.rows, bytes: flush.bytes };
  return { rows: Math.min(flush.rows, FIRST_LIMITS.rows), bytes: Math.min(flush.bytes, FIRST_LIMITS.bytes) };
}
