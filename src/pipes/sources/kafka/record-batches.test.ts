import { compressionsAlgorithms, createRecordsBatch } from '@platformatic/kafka';
import { describe, expect, it } from 'vitest';
import { walkRecords } from './record-batches.js';

// Record batches written by the client's own producer code (createRecordsBatch), as a broker
// stores and sends them; the base offset and the control bit are set as the broker would.
type Message = { key?: Buffer; value?: Buffer; headers?: Map<Buffer, Buffer>; timestamp?: bigint };

function batch(
  baseOffset: bigint,
  messages: Message[],
  options: { compression?: string; producerId?: bigint; transactional?: boolean; control?: boolean } = {},
): Buffer {
  const bytes = createRecordsBatch(
    messages.map((m) => ({ topic: 't', ...m }) as never),
    {
      compression: (options.compression ?? 'none') as never,
      producerId: options.producerId ?? -1n,
      ...(options.transactional ? { transactionalId: 'tx' } : {}),
    },
  ).buffer;
  bytes.writeBigInt64BE(baseOffset, 0);
  if (options.control) bytes.writeInt16BE(bytes.readInt16BE(21) | 0x30, 21);
  return bytes;
}

const json = (id: number) => Buffer.from(`{"id":${id}}`);
const marker = (type: 0 | 1) => ({ key: Buffer.from([0, 0, 0, type]), value: Buffer.alloc(6) });
const where = { topic: 't', partition: 3, from: 0n };

describe('walking a fetched records section', () => {
  it('gives each record its offset, timestamp, key, value and headers, from the offset asked for', () => {
    const section = batch(10n, [
      { key: Buffer.from('k1'), value: json(1), timestamp: 1_700_000_000_123n },
      {
        value: json(2),
        headers: new Map([[Buffer.from('h'), Buffer.from('v')]]),
        timestamp: 1_700_000_000_456n,
      },
      { key: Buffer.from('k3'), value: json(3), timestamp: 1_700_000_000_789n },
    ]);
    const { records, next } = walkRecords(section, where, []);
    expect(next).toBe(13n);
    expect(records.map((r) => [r.topic, r.partition, r.offset, r.timestamp])).toEqual([
      ['t', 3, 10n, 1_700_000_000_123],
      ['t', 3, 11n, 1_700_000_000_456],
      ['t', 3, 12n, 1_700_000_000_789],
    ]);
    expect(records.map((r) => r.value?.toString())).toEqual(['{"id":1}', '{"id":2}', '{"id":3}']);
    // This producer writes a message without a key as an empty one.
    expect(records.map((r) => r.key?.toString())).toEqual(['k1', '', 'k3']);
    expect(records[1]?.headers.map(([k, v]) => [k.toString(), v.toString()])).toEqual([['h', 'v']]);
    expect(records[0]?.headers).toEqual([]);
    // The value where it lies in the batch's bytes, as recordsText copies it.
    const first = records[0];
    expect(first?.bytes.subarray(first.valueStart, first.valueStart + first.valueLength).toString()).toBe(
      '{"id":1}',
    );
    // A fetch from inside a batch gets the whole batch: the records before the offset are left out.
    expect(walkRecords(section, { ...where, from: 11n }, []).records.map((r) => r.offset)).toEqual([
      11n,
      12n,
    ]);
  });

  for (const compression of ['gzip', 'snappy', 'lz4', 'zstd'] as const) {
    it.runIf(compressionsAlgorithms[compression].available)(`reads a ${compression} batch`, () => {
      const section = batch(0n, [{ value: json(1) }, { value: json(2) }], { compression });
      expect(section.readInt16BE(21) & 0x07).toBe(compressionsAlgorithms[compression].bitmask);
      const { records } = walkRecords(section, where, []);
      expect(records.map((r) => r.value?.toString())).toEqual(['{"id":1}', '{"id":2}']);
    });
  }

  it('leaves a batch cut short at the end of the section for the next fetch', () => {
    const whole = batch(0n, [{ value: json(1) }, { value: json(2) }]);
    const cut = batch(2n, [{ value: json(3) }]);
    const section = Buffer.concat([whole, cut.subarray(0, cut.length - 5)]);
    const { records, next } = walkRecords(section, where, []);
    expect(records.map((r) => r.offset)).toEqual([0n, 1n]);
    expect(next).toBe(2n);
  });

  it('reads committed: an aborted transaction and every transaction marker are left out', () => {
    const section = Buffer.concat([
      batch(0n, [{ value: json(0) }, { value: json(1) }], { producerId: 7n, transactional: true }),
      batch(2n, [marker(0)], { producerId: 7n, transactional: true, control: true }),
      batch(3n, [{ value: json(3) }, { value: json(4) }], { producerId: 7n, transactional: true }),
      batch(5n, [marker(1)], { producerId: 7n, transactional: true, control: true }),
      batch(6n, [{ value: json(6) }], { producerId: 9n }),
    ]);
    const { records, next } = walkRecords(section, where, [{ producerId: 7n, firstOffset: 0n }]);
    expect(records.map((r) => r.offset)).toEqual([3n, 4n, 6n]);
    expect(next).toBe(7n);
    // Without the broker's list of aborted transactions every data record is read.
    expect(walkRecords(section, where, []).records.map((r) => r.offset)).toEqual([0n, 1n, 3n, 4n, 6n]);
  });

  it('refuses a batch whose records run past its end rather than reading past it (a broker is not trusted)', () => {
    const section = batch(0n, [{ value: json(1) }, { value: json(2) }]);
    section.writeInt32BE(2_000_000_000, 57);
    expect(() => walkRecords(section, where, [])).toThrow(/malformed/);
    const short = batch(0n, [{ value: json(1) }]);
    // The value's length says more bytes than the batch holds.
    short.writeUInt8(0x7e, short.indexOf('{"id":1}') - 1);
    expect(() => walkRecords(short, where, [])).toThrow(/malformed/);
  });

  it('refuses messages of the formats before record batches, saying which', () => {
    const section = batch(0n, [{ value: json(1) }]);
    section.writeInt8(1, 16);
    expect(() => walkRecords(section, where, [])).toThrow(/format v1/);
  });
});
