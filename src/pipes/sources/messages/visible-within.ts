/**
 * A stream's wait (`streaming_max_insert_wait_ms`, a PostgreSQL pipe's `syncIntervalSeconds`) is
 * how long a message may wait to be visible, not how long it waits before its batch starts
 * loading: the batch is taken that much earlier than the wait as recent batches took from claim
 * to commit (the longest of the last few), plus one poll of the runner, plus a tenth of the wait
 * (at most a second) for a write slower than those. Taken at the wait less the write time alone,
 * the slowest hundredth of bench/postgres.ts's changes came at 0.94-0.96 of it, a few after it.
 */
export interface WriteTiming {
  /** The longest claim-to-commit time of the recent batches (RecentWrites.longestMs). */
  recentWriteMs: number;
  /** How long the runner may take to ask the source again (SourceRun.pollMs). */
  pollMs: number;
}

/** How long the oldest held message waits before its batch is taken, for it to be visible within `waitMs`. */
export function takeAfterMs(waitMs: number, timing: WriteTiming): number {
  const slowerWriteMs = Math.min(1000, waitMs / 10);
  return Math.max(0, waitMs - timing.recentWriteMs - timing.pollMs - slowerWriteMs);
}

const KEPT = 20;

/** The claim-to-commit times of a run's last batches, each batch named by its source's key. */
export class RecentWrites {
  private readonly claimedAt = new Map<string, number>();
  private times: number[] = [];

  claimed(key: string): void {
    this.claimedAt.set(key, Date.now());
  }

  /** A batch claimed by an earlier process (read again after a restart) says nothing of this one. */
  committed(key: string): void {
    const at = this.claimedAt.get(key);
    if (at === undefined) return;
    this.claimedAt.delete(key);
    this.times = [...this.times.slice(1 - KEPT), Date.now() - at];
  }

  get longestMs(): number {
    return Math.max(0, ...this.times);
  }
}
