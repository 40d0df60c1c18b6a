import { describe, expect, it } from 'vitest';
import { exceeds } from './decide.js';
import { windowsToEvaluate } from './windows.js';

describe('threshold types (README, "Alerts area": above is >=, below is <)', () => {
  it.each([
    ['above', 5, 5, null, true],
    ['above', 4.9, 5, null, false],
    ['above_exclusive', 5, 5, null, false],
    ['above_exclusive', 5.1, 5, null, true],
    ['below', 5, 5, null, false],
    ['below', 4.9, 5, null, true],
    ['below_or_equal', 5, 5, null, true],
    ['equal', 5, 5, null, true],
    ['equal', 6, 5, null, false],
    ['not_equal', 6, 5, null, true],
    ['between', 5, 5, 10, true],
    ['between', 10, 5, 10, true],
    ['between', 10.5, 5, 10, false],
    ['not_between', 4, 5, 10, true],
    ['not_between', 7, 5, 10, false],
  ])('%s: value %d against %d (max %s) -> %s', (type, value, threshold, max, expected) => {
    expect(exceeds(value, type, threshold, max)).toBe(expected);
  });
});

describe('windows to evaluate', () => {
  const at = (text: string) => new Date(text);
  it('a new alert starts with the last completed window, aligned to its interval', () => {
    expect(windowsToEvaluate(at('2026-11-22T10:07:30Z'), '5m', null)).toEqual([
      { start: at('2026-11-22T10:00:00Z'), end: at('2026-11-22T10:05:00Z') },
    ]);
  });

  it('skips evaluated windows and back-fills the missed ones', () => {
    const windows = windowsToEvaluate(at('2026-11-22T10:17:00Z'), '5m', at('2026-11-22T10:00:00Z'));
    expect(windows.map((w) => w.start.toISOString())).toEqual([
      '2026-11-22T10:00:00.000Z',
      '2026-11-22T10:05:00.000Z',
      '2026-11-22T10:10:00.000Z',
    ]);
    expect(windowsToEvaluate(at('2026-11-22T10:04:59Z'), '5m', at('2026-11-22T10:00:00Z'))).toEqual([]);
  });

  it('back-fills at most 50 windows and at most 24 hours', () => {
    const minutes = windowsToEvaluate(at('2026-11-22T10:00:00Z'), '1m', at('2026-11-20T00:00:00Z'));
    expect(minutes).toHaveLength(50);
    expect(minutes.at(-1)?.end.toISOString()).toBe('2026-11-22T10:00:00.000Z');
    const hours = windowsToEvaluate(at('2026-11-22T10:00:00Z'), '1h', at('2026-11-01T00:00:00Z'));
    expect(hours).toHaveLength(24);
    expect(windowsToEvaluate(at('2026-11-22T10:00:00Z'), '1d', at('2026-11-01T00:00:00Z'))).toHaveLength(1);
  });
});
