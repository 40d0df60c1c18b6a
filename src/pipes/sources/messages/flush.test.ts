import { describe, expect, it } from 'vitest';
import { batchLimits, FIRST_WAIT_MS, flushDue } from './flush.js';

const flush = { rows: 100, bytes: 1_000_000, waitMs: 5_000 };
const held = (count: number, waitedMs: number) => ({
  messages: { length: count },
  bytes: count * 10,
  since: Date.now() - waitedMs,
});

describe("a stream's flush", () => {
  it("flushes a run's first batch after FIRST_WAIT_MS, later ones after the pipe's wait", () => {
    const waited = held(5, FIRST_WAIT_MS + 50);
    expect(flushDue([waited], flush, true)).toBe(true);
    expect(flushDue([waited], flush, false)).toBe(false);
    expect(flushDue([held(5, 10)], flush, true)).toBe(false);
    expect(flushDue([held(5, 5_100)], flush, false)).toBe(true);
  });

  it('never waits longer for the first batch than the pipe asks, and flushes on size at once', () => {
    expect(flushDue([held(5, 60)], { ...flush, waitMs: 50 }, true)).toBe(true);
    expect(flushDue([held(100, 0)], flush, false)).toBe(true);
    expect(flushDue([], flush, true)).toBe(false);
  });

  it("flushes a run's first batch at once when it holds the first batch's limits", () => {
    const big = { rows: 100_000, bytes: 32 * 1024 * 1024, waitMs: 5_000 };
    const backlog = { messages: { length: 2_000 }, bytes: 4 * 1024 * 1024, since: Date.now() };
    expect(flushDue([backlog], big, true)).toBe(true);
    expect(flushDue([backlog], big, false)).toBe(false);
    expect(flushDue([{ ...backlog, messages: { length: 10_000 }, bytes: 1_000 }], big, true)).toBe(true);
    expect(flushDue([{ ...backlog, bytes: 1_000 }], big, true)).toBe(false);
  });

  it("takes less into a run's first batch, never more than the pipe's limits", () => {
    expect(batchLimits(flush, false)).toEqual({ rows: 100, bytes: 1_000_000 });
    expect(batchLimits({ ...flush, rows: 100_000, bytes: 32 * 1024 * 1024 }, true)).toEqual({
      rows: 10_000,
      bytes: 4 * 1024 * 1024,
    });
    expect(batchLimits(flush, true)).toEqual({ rows: 100, bytes: 1_000_000 });
  });
});
