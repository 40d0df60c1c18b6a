import { describe, expect, it } from 'vitest';
import type { Change, Transaction } from './change-stream.js';
import { isWithin, partAfter, positionAfter, rangeLabel, reaches, splitAt } from './positions.js';

// A large transaction T (commit at 1000, ending at 1040) read in pieces after a whole one T0
// (ending at 900): where a batch may end, what a restart leaves out, whatever the cuts.
const change = (lsn: number) => ({ kind: 'truncate', lsn: BigInt(lsn), relations: [] }) as Change;
const item = (finalLsn: number, lsns: number[], end?: number): Transaction => ({
  xid: 1,
  finalLsn: BigInt(finalLsn),
  endLsn: BigInt(end ?? 0),
  ...(end === undefined ? { through: BigInt(lsns.at(-1) as number) } : {}),
  changes: lsns.map(change),
  receivedAt: 0,
  bytes: 0,
});
const t0 = item(880, [100, 200], 900);
const piece1 = item(1000, [300, 400]);
const piece2 = item(1000, [500, 600]);
const last = item(1000, [700], 1040);
const lsnsOf = (t: Transaction | undefined) => t?.changes.map((c) => Number(c.lsn));

describe('positions of changes read in pieces', () => {
  it('ends a batch inside a large transaction at its last piece, keeping the whole transactions before', () => {
    const start = { lsn: 0n };
    const mid = positionAfter(start, [t0, piece1]);
    expect(mid).toEqual({ lsn: 900n, partial: { txn: 1000n, through: 400n } });
    expect(positionAfter(mid, [piece2, last])).toEqual({ lsn: 1040n });
    expect([t0, piece1].every((t) => isWithin(t, mid))).toBe(true);
    expect([piece2, last].some((t) => isWithin(t, mid))).toBe(false);
    expect(isWithin(last, { lsn: 1040n })).toBe(true);
  });

  it('after a restart, leaves out what was committed of the transaction that comes again whole', () => {
    const mid = { lsn: 900n, partial: { txn: 1000n, through: 400n } };
    const again = item(1000, [300, 400, 500, 600, 700], 1040);
    expect(partAfter(t0, mid)).toBeUndefined();
    expect(lsnsOf(partAfter(again, mid))).toEqual([500, 600, 700]);
    // Cut elsewhere this time: the batch up to 600 takes the head, the rest stays.
    const to = { lsn: 900n, partial: { txn: 1000n, through: 600n } };
    const [head, rest] = splitAt(again, to);
    expect(lsnsOf(partAfter(head as Transaction, mid))).toEqual([500, 600]);
    expect(lsnsOf(rest)).toEqual([700]);
    expect(rest?.endLsn).toBe(1040n);
    // The bytes (the rates' measure) are shared as the changes are.
    const [four, one] = splitAt({ ...again, bytes: 500 }, to);
    expect([four?.bytes, one?.bytes]).toEqual([400, 100]);
  });

  it('knows when everything up to a position has arrived', () => {
    const to = { lsn: 900n, partial: { txn: 1000n, through: 600n } };
    expect(reaches(t0, to)).toBe(false);
    expect(reaches(piece1, to)).toBe(false);
    expect(reaches(piece2, to)).toBe(true);
    expect(reaches(last, to)).toBe(true);
    expect(reaches(t0, { lsn: 900n })).toBe(true);
    expect(reaches(piece1, { lsn: 900n })).toBe(true);
  });

  it('names a range inside a large transaction by the changes it holds', () => {
    expect(rangeLabel({ kind: 'changes', from: '0/10', to: '0/20', changes: 3 })).toBe('changes 0/10..0/20');
    const partial = (through: string) => ({ txn: '0/40', through });
    expect(
      rangeLabel({
        kind: 'changes',
        from: '0/20',
        to: '0/20',
        changes: 9,
        fromPartial: partial('0/28'),
        toPartial: partial('0/30'),
      }),
    ).toBe(
      'changes 0/20..0/20 (after change 0/28 of the transaction committed at 0/40, through change 0/30 of the transaction committed at 0/40)',
    );
  });
});
