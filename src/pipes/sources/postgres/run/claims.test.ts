import { describe, expect, it } from 'vitest';
import type { ChangeStream, Transaction } from '../changes/index.js';
import { claimChanges } from './claims.js';
import type { Cursor } from './cursor.js';

// When a batch of changes is taken: the oldest change waiting must be visible within
// syncIntervalSeconds, so the batch leaves early by the recent write time, a poll and a tenth of
// the interval. The end-to-end figures are in bench/postgres.ts.
const cursor: Cursor = { phase: 'cdc', slot: 's', publication: 'p', lsn: '0/10', tables: {}, mapped: [] };

function streamWith(waitedMs: number, changes = 1): ChangeStream {
  const transaction: Transaction = {
    xid: 1,
    finalLsn: 30n,
    endLsn: 32n,
    changes: Array.from({ length: changes }, () => ({}) as Transaction['changes'][number]),
    receivedAt: Date.now() - waitedMs,
    bytes: 10,
  };
  return { ready: [transaction], takeRange: () => [] } as unknown as ChangeStream;
}

const timing = { recentWriteMs: 200, pollMs: 100 };

describe('claimChanges', () => {
  it('takes the batch once the oldest change waited the interval less the write, a poll and a tenth', () => {
    const settings = { syncIntervalSeconds: 1 };
    // 1000 - 200 - 100 - 100 = 600 ms.
    expect(claimChanges(streamWith(550), cursor, settings, timing)).toBe('idle');
    expect(claimChanges(streamWith(650), cursor, settings, timing)).toMatchObject({
      range: { kind: 'changes', from: '0/10', to: '0/20', changes: 1 },
      cursor: { phase: 'cdc', lsn: '0/20' },
    });
  });

  it('leaves at most a second early for the slower write, and at once for pullBatchSize changes', () => {
    const settings = { syncIntervalSeconds: 60, pullBatchSize: 5 };
    // 60000 - 200 - 100 - 1000 = 58700 ms.
    expect(claimChanges(streamWith(58_600), cursor, settings, timing)).toBe('idle');
    expect(claimChanges(streamWith(58_800), cursor, settings, timing)).not.toBe('idle');
    expect(claimChanges(streamWith(0, 5), cursor, settings, timing)).not.toBe('idle');
  });
});
