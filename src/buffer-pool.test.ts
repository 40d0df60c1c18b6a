import { afterEach, describe, expect, it, vi } from 'vitest';
import { BufferPool } from './buffer-pool.js';

const SIZE = 64 * 1024;

describe('a pool of buffers', () => {
  afterEach(() => vi.useRealTimers());

  it('hands a buffer given back out again, once however often it was given', () => {
    const pool = new BufferPool(SIZE, 4);
    const first = pool.take(SIZE);
    pool.give([first.subarray(0, 100)]);
    pool.give([first]);
    expect(pool.kept).toBe(1);
    expect(pool.take(SIZE).buffer === first.buffer).toBe(true);
    expect(pool.take(SIZE).buffer === first.buffer).toBe(false);
  });

  it('keeps only whole buffers it made, and no more than it may', () => {
    const pool = new BufferPool(SIZE, 2);
    const small = pool.take(100);
    expect(small.length).toBe(100);
    const large = pool.take(SIZE * 2);
    pool.give([small, large, pool.take(SIZE).subarray(10), Buffer.alloc(SIZE), Buffer.allocUnsafe(10)]);
    expect(pool.kept).toBe(0);
    pool.give([pool.take(SIZE), pool.take(SIZE), pool.take(SIZE)]);
    expect(pool.kept).toBe(2);
  });

  it('lets its spares go when none was given back for ten seconds', () => {
    vi.useFakeTimers();
    const pool = new BufferPool(SIZE, 4);
    pool.give([pool.take(SIZE)]);
    vi.advanceTimersByTime(9_000);
    pool.give([pool.take(SIZE), pool.take(SIZE)]);
    vi.advanceTimersByTime(9_000);
    expect(pool.kept).toBe(2);
    vi.advanceTimersByTime(1_000);
    expect(pool.kept).toBe(0);
  });
});
