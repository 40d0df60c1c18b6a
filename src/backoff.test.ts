import { describe, expect, it } from 'vitest';
import { BackoffDelays, backoffDelay } from './backoff.js';

/** A source of "random" numbers that returns the given ones in turn. */
function sequence(...values: number[]): () => number {
  let next = 0;
  return () => values[next++ % values.length] as number;
}

describe('backoffDelay', () => {
  it('doubles from the base for each attempt and stops at the maximum, without jitter', () => {
    const delays = [1, 2, 3, 4, 5, 6, 7, 100].map((attempt) =>
      backoffDelay({ attempt, baseMs: 1000, maxMs: 30_000, jitter: 'none' }),
    );
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
  });

  it('keeps the first wait at the base for an attempt below 1 and never overflows', () => {
    expect(backoffDelay({ attempt: 0, baseMs: 250, maxMs: 10_000, jitter: 'none' })).toBe(250);
    expect(backoffDelay({ attempt: 10_000, baseMs: 250, maxMs: 10_000, jitter: 'none' })).toBe(10_000);
  });

  it('with equal jitter waits between half and all of the doubled wait', () => {
    const at = (random: number, attempt: number) =>
      backoffDelay({ attempt, baseMs: 1000, maxMs: 10_000, jitter: 'equal', random: () => random });
    expect(at(0, 1)).toBe(500);
    expect(at(0.999_999, 1)).toBe(999);
    expect(at(0.5, 3)).toBe(3000);
    expect(at(0, 10)).toBe(5000);
    expect(at(0.999_999, 10)).toBe(9999);
  });

  it('with full jitter waits between nothing and the doubled wait', () => {
    const at = (random: number) =>
      backoffDelay({ attempt: 2, baseMs: 1000, maxMs: 10_000, jitter: 'full', random: () => random });
    expect(at(0)).toBe(0);
    expect(at(0.25)).toBe(500);
    expect(at(0.999_999)).toBe(1999);
  });

  it('jitters by default (equal), with Math.random: waits differ and stay in their bounds', () => {
    const delays = Array.from({ length: 200 }, () =>
      backoffDelay({ attempt: 4, baseMs: 100, maxMs: 60_000 }),
    );
    for (const delay of delays) {
      expect(delay).toBeGreaterThanOrEqual(400);
      expect(delay).toBeLessThanOrEqual(800);
    }
    // 200 draws from 400 values: the chance they are all one value is nil.
    expect(new Set(delays).size).toBeGreaterThan(50);
  });
});

describe('BackoffDelays', () => {
  it('hands out the waits of successive attempts and starts over after reset', () => {
    const delays = new BackoffDelays({ baseMs: 250, maxMs: 1000, random: sequence(0, 0.5) });
    expect([delays.next(), delays.next(), delays.next(), delays.next()]).toEqual([125, 375, 500, 750]);
    delays.reset();
    expect(delays.next()).toBe(125);
  });
});
