import { randomBytes } from 'node:crypto';
import { createRecordsBatch } from '@platformatic/kafka';
import { describe, expect, it } from 'vitest';
import { walkRecords } from './record-batches.js';
import { PARTITION_MAX_BYTES, pooledSection, sectionOf } from './sections.js';

// A fetched section as the connection holds it: the socket's chunks, copied into one buffer.
function fetched(values: Buffer[], compression = 'none') {
  const batch = createRecordsBatch(
    values.map((value) => ({ topic: 't', value }) as never),
    { compression: compression as never },
  ).buffer;
  const chunks: Buffer[] = [];
  for (let at = 0; at < batch.length; at += 65_536) chunks.push(batch.subarray(at, at + 65_536));
  return sectionOf(chunks, batch.length);
}

const where = { topic: 't', partition: 0, from: 0n };
/** Values large enough that their section is a buffer of the pool. */
const large = (fill: string) => [0, 1, 2].map((i) => Buffer.from(`{"v":"${fill.repeat(400_000)}${i}"}`));
const valuesOf = (records: { value: Buffer | null }[]) => records.map((r) => r.value?.toString().slice(-4));

describe("fetched sections in the pool's buffers", () => {
  it('copies the chunks into one buffer, from the pool when large', () => {
    const small = fetched([Buffer.from('{"a":1}')]);
    expect(pooledSection(small)).toBe(false);
    expect(walkRecords(small, where, []).records[0]?.value?.toString()).toBe('{"a":1}');
    const big = fetched(large('a'));
    expect(pooledSection(big)).toBe(true);
    expect(big.buffer.byteLength).toBe(PARTITION_MAX_BYTES);
  });

  it('hands a section out again only once every record walked from it is done with', () => {
    const first = fetched(large('a'));
    const { records } = walkRecords(first, where, []);
    expect(valuesOf(records)).toEqual(['a0"}', 'a1"}', 'a2"}']);
    (records[0] as (typeof records)[0]).done();
    (records[1] as (typeof records)[0]).done();
    // Done twice counts once: the third record still holds the buffer.
    (records[1] as (typeof records)[0]).done();
    const meanwhile = fetched(large('b'));
    expect(meanwhile.buffer === first.buffer).toBe(false);
    expect(valuesOf(records)).toEqual(['a0"}', 'a1"}', 'a2"}']);
    (records[2] as (typeof records)[0]).done();
    const after = fetched(large('c'));
    expect(after.buffer === first.buffer).toBe(true);
  });

  it("gives a compressed batch's section back at once: its records are in a buffer of their own", () => {
    // Random text compresses little, so the compressed section is still a large one.
    const values = [0, 1, 2].map((i) =>
      Buffer.from(`{"v":"${randomBytes(450_000).toString('base64')}${i}"}`),
    );
    const first = fetched(values, 'gzip');
    expect(pooledSection(first)).toBe(true);
    const { records } = walkRecords(first, where, []);
    const after = fetched(large('e'));
    expect(after.buffer === first.buffer).toBe(true);
    expect(records.every((r, i) => r.value?.equals(values[i] as Buffer))).toBe(true);
  });
});
