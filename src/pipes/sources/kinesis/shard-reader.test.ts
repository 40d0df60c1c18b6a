import { describe, expect, it } from 'vitest';
import type { Page, ShardHost } from './shard-host.js';
import { ShardReader } from './shard-reader.js';

// hold() only tells its host that records came: a stand-in host is enough to show what a page
// tells the flush.
const host = { arrived: () => {} } as unknown as ShardHost;
const page = (records: number, extra: Partial<Page> = {}): Page => ({
  messages: [...Array(records).keys()].map((i) => ({
    value: Buffer.from('{}'),
    stream: 's',
    shard: 'shard-0',
    sequence: `${i + 1}`,
    partitionKey: 'k',
    arrivedAt: 0,
  })),
  bytes: records * 2,
  next: 'iterator',
  millisBehindLatest: 0,
  ...extra,
});

describe('a shard reader (stand-in host)', () => {
  it('is behind after a whole page or while Kinesis says it is behind, so its batches take the whole wait', () => {
    const reader = new ShardReader(host, 'shard-0', 0, { type: 'TRIM_HORIZON' } as never, undefined);
    reader.hold(page(10_000, { full: true }));
    expect(reader.behind).toBe(true);
    reader.hold(page(3));
    expect(reader.behind).toBe(false);
    reader.hold(page(3, { millisBehindLatest: 5_000 }));
    expect(reader.behind).toBe(true);
  });
});
