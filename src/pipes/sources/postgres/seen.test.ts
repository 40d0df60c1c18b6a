import { describe, expect, it } from 'vitest';
import { sawTransaction } from './seen.js';

describe('what a snapshot saw, for a transaction the slot replays', () => {
  const seen = { xmin: '100', xmax: '110', xip: ['103', '107'] };

  it('saw what ended before it, not what ran or began after', () => {
    expect([99, 100, 102, 104, 109].map((xid) => sawTransaction(seen, xid))).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect([103, 107, 110, 111, 5000].map((xid) => sawTransaction(seen, xid))).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it('puts a 32-bit xid in the epoch nearest the snapshot, across a wraparound', () => {
    const epoch = 2n ** 32n;
    // xmin just below an epoch's end, xmax just after it: xid 5 belongs to the new epoch.
    const wrapped = { xmin: String(epoch - 10n), xmax: String(epoch + 10n), xip: [String(epoch + 5n)] };
    expect(sawTransaction(wrapped, Number(epoch - 3n))).toBe(true);
    expect(sawTransaction(wrapped, 4)).toBe(true);
    expect(sawTransaction(wrapped, 5)).toBe(false);
    expect(sawTransaction(wrapped, 12)).toBe(false);
    expect(sawTransaction(wrapped, Number(epoch - 20n))).toBe(true);
  });
});
