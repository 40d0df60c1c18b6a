import { describe, expect, it } from 'vitest';
import { batchLimits, FIRST_WAIT_MS, flushDue } from './flush.js';
import { RecentWrites, takeAfterMs } from './visible-within.js';

const flush = { rows: 100, bytes: 1_000_000, waitMs: 5_000 };
/** A run whose batches wrote at once and whose runner never waits: the wait less a tenth. */
const NO_WRITES = { recentWriteMs: 0, pollMs: 0 };
const held = (count: number, waitedMs: number) => ({
  messages: { length: count },
  bytes: count * 10,
  since: Date.now() - waitedMs,
});

describe("a stream's flush", () => {
  it("flushes a run's first batch after FIRST_WAIT_MS, later ones after the pipe's wait", () => {
    const waited = held(5, FIRST_WAIT_MS + 50);
    expect(flushDue([waited], flush, NO_WRITES, true)).toBe(true);
    expect(flushDue([waited], flush, NO_WRITES, false)).toBe(false);
    expect(flushDue([held(5, 10)], flush, NO_WRITES, true)).toBe(false);
    expect(flushDue([held(5, 4_400)], flush, NO_WRITES, false)).toBe(false);
    expect(flushDue([held(5, 4_600)], flush, NO_WRITES, false)).toBe(true);
  });

  it('never waits longer for the first batch than the pipe asks, and flushes on size at once', () => {
    expect(flushDue([held(5, 60)], { ...flush, waitMs: 50 }, NO_WRITES, true)).toBe(true);
    expect(flushDue([held(100, 0)], flush, NO_WRITES, false)).toBe(true);
    expect(flushDue([], flush, NO_WRITES, true)).toBe(false);
  });

  it("flushes a run's first batch at once when it holds the first batch's limits", () => {
    const big = { rows: 100_000, bytes: 32 * 1024 * 1024, waitMs: 5_000 };
    const backlog = { messages: { length: 2_000 }, bytes: 4 * 1024 * 1024, since: Date.now() };
    expect(flushDue([backlog], big, NO_WRITES, true)).toBe(true);
    expect(flushDue([backlog], big, NO_WRITES, false)).toBe(false);
    expect(flushDue([{ ...backlog, messages: { length: 10_000 }, bytes: 1_000 }], big, NO_WRITES, true)).toBe(
      true,
    );
    expect(flushDue([{ ...backlog, bytes: 1_000 }], big, NO_WRITES, true)).toBe(false);
  });

  it("takes less into a run's first batch, never more than the pipe's limits", () => {
    expect(batchLimits(flush, false)).toEqual({ rows: 100, bytes: 1_000_000 });
    expect(batchLimits({ ...flush, rows: 100_000, bytes: 32 * 1024 * 1024 }, true)).toEqual({
      rows: 10_000,
      bytes: 4 * 1024 * 1024,
    });
    expect(batchLimits(flush, true)).toEqual({ rows: 100, bytes: 1_000_000 });
  });

  it('takes a batch early enough for its oldest message to be visible within the wait', () => {
    const second = { ...flush, waitMs: 1_000 };
    const timing = { recentWriteMs: 300, pollMs: 100 };
    // 1000 less the recent write (300), one poll (100) and a tenth of the wait (100): 500.
    expect(takeAfterMs(1_000, timing)).toBe(500);
    expect(flushDue([held(5, 450)], second, timing, false)).toBe(false);
    expect(flushDue([held(5, 550)], second, timing, false)).toBe(true);
    // Reading a backlog, the whole wait's worth goes in a batch: those messages are late already.
    expect(flushDue([{ ...held(5, 550), behind: true }], second, timing, false)).toBe(false);
    expect(flushDue([{ ...held(5, 1_050), behind: true }], second, timing, false)).toBe(true);
    // The tenth is a second at most, and a write slower than the wait takes every poll's messages.
    expect(takeAfterMs(60_000, timing)).toBe(58_600);
    expect(takeAfterMs(500, { recentWriteMs: 900, pollMs: 100 })).toBe(0);
  });

  it('learns the longest claim-to-commit time of the recent batches, not of batches it did not claim', async () => {
    const writes = new RecentWrites();
    expect(writes.longestMs).toBe(0);
    writes.committed('claimed by an earlier process');
    expect(writes.longestMs).toBe(0);
    writes.claimed('a');
    writes.claimed('b');
    await new Promise((resolve) => setTimeout(resolve, 60));
    writes.committed('b');
    writes.claimed('c');
    writes.committed('c');
    expect(writes.longestMs).toBeGreaterThanOrEqual(55);
    expect(writes.longestMs).toBeLessThan(1_000);
    // Twenty quick batches later the slow one is forgotten.
    for (let i = 0; i < 20; i += 1) {
      writes.claimed(`q${i}`);
      writes.committed(`q${i}`);
    }
    expect(writes.longestMs).toBeLessThan(20);
  });
});
