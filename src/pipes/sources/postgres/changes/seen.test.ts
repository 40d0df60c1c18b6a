import { describe, expect, it } from 'vitest';
import { sawTransaction } from './seen.js';

describe('what a snapshot saw, for a transaction the slot replays', () => {
  const seen = { xmin: '100', xmax: '110', xip: ['103', '107'], lsn: '0/5000' };
  const at = (xid: number, finalLsn = 0x4000n) => ({ xid, finalLsn });

  it('saw what ended before it, not what ran or began after', () => {
    expect([99, 100, 102, 104, 109].map((xid) => sawTransaction(seen, at(xid)))).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect([103, 107, 110, 111, 5000].map((xid) => sawTransaction(seen, at(xid)))).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it('did not see what committed after its WAL position, whatever its xid (2^31 transactions later)', () => {
    expect(sawTransaction(seen, at(102, 0x5001n))).toBe(false);
    expect(sawTransaction(seen, at(102, 0x5000n))).toBe(true);
  });

  it('puts a 32-bit xid in the epoch nearest the snapshot, across a wraparound', () => {
    const epoch = 2n ** 32n;
    // xmin just below an epoch's end, xmax just after it: xid 5 belongs to the new epoch.
    const wrapped = {
      xmin: String(epoch - 10n),
      xmax: String(epoch + 10n),
      xip: [String(epoch + 5n)],
      lsn: '0/5000',
    };
    expect(sawTransaction(wrapped, at(Number(epoch - 3n)))).toBe(true);
    expect(sawTransaction(wrapped, at(4))).toBe(true);
    expect(sawTransaction(wrapped, at(5))).toBe(false);
    expect(sawTransaction(wrapped, at(12))).toBe(false);
    expect(sawTransaction(wrapped, at(Number(epoch - 20n)))).toBe(true);
  });
});
