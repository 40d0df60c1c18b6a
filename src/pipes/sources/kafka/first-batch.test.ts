import { describe, expect, it } from 'vitest';
import { FirstBatch } from './first-batch.js';
import { PartitionState } from './member.js';

const flush = { rows: 100_000, bytes: 32 * 1024 * 1024, waitMs: 5_000 };
const first = { rows: 10_000, bytes: 4 * 1024 * 1024 };
const full = { rows: 200_000, bytes: 64 * 1024 * 1024 };

/** A partition fetched up to `position` of a log that ends at `end`, holding nothing. */
function partition(position: bigint, end: bigint): PartitionState {
  const state = new PartitionState('t', 0, 0n);
  state.add([], position, end);
  return state;
}

describe("a Kafka run's first batch", () => {
  it('on a backlog: the first fetch and every one until it commits take its worth, and it runs alone', () => {
    const start = new FirstBatch(flush, 3);
    const backlog = [partition(1_000n, 1_000_000n)];
    expect(start.fetchLimits(backlog)).toEqual(first);
    start.claimed = true;
    expect(start.fetchLimits(backlog)).toEqual(first);
    expect(start.inFlight(backlog)).toBe(1);
    start.committed = true;
    expect(start.fetchLimits(backlog)).toEqual(full);
    expect(start.inFlight(backlog)).toBe(3);
  });

  it('caught up: only the first fetch is small; messages arriving meanwhile are fetched and claimed', () => {
    const start = new FirstBatch(flush, 3);
    const caughtUp = [partition(1_000n, 1_000n)];
    expect(start.fetchLimits(caughtUp)).toEqual(first);
    start.claimed = true;
    expect(start.fetchLimits(caughtUp)).toEqual(full);
    expect(start.inFlight(caughtUp)).toBe(3);
  });

  it('its first answer waits for the first fetch that brings messages; later answers do not wait', async () => {
    const start = new FirstBatch(flush, 3);
    const signal = new AbortController().signal;
    let answered = false;
    const answer = start.firstAnswer(signal).then(() => {
      answered = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(answered).toBe(false);
    start.fetched();
    await answer;
    const before = performance.now();
    await start.firstAnswer(signal);
    expect(performance.now() - before).toBeLessThan(50);
  });

  it('stops waiting when the run stops', async () => {
    const start = new FirstBatch(flush, 3);
    const stopping = new AbortController();
    const before = performance.now();
    const answer = start.firstAnswer(stopping.signal);
    stopping.abort();
    await answer;
    // Not the whole second it waits for messages.
    expect(performance.now() - before).toBeLessThan(500);
  });
});
