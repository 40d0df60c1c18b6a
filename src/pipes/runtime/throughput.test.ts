import { describe, expect, it } from 'vitest';
import { Throughput } from './throughput.js';

describe('a running pipe’s rates', () => {
  it('a few rows a minute read as a fraction, not 0 beside a bytes rate that is not', () => {
    let now = 0;
    const throughput = new Throughput(() => now);
    now = 60_000;
    throughput.add(10, 250);
    expect(throughput.rates()).toEqual({ rowsPerSecond: 0.17, bytesPerSecond: 4.17 });
  });

  it('forgets what was committed more than a minute ago', () => {
    let now = 0;
    const throughput = new Throughput(() => now);
    throughput.add(600, 6000);
    now = 61_000;
    expect(throughput.rates()).toEqual({ rowsPerSecond: 0, bytesPerSecond: 0 });
  });

  it('is quiet once a minute passed without a commit, never in its first minute', () => {
    let now = 0;
    const throughput = new Throughput(() => now);
    now = 30_000;
    expect(throughput.quiet()).toBe(false);
    now = 60_000;
    expect(throughput.quiet()).toBe(true);
    throughput.add(1, 10);
    expect(throughput.quiet()).toBe(false);
    now = 121_000;
    expect(throughput.quiet()).toBe(true);
  });
});
