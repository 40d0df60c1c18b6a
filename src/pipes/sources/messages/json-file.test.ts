import { describe, expect, it } from 'vitest';
import type { InsertPlan } from '../../records/index.js';
import { recordsText } from './json-file.js';
import type { MessagePlan } from './plan.js';
import type { MessageSource } from './source.js';

// Messages whose values lie inside a larger buffer, as a Kafka record batch holds them.
interface Held {
  bytes: Buffer;
  at: number;
  length: number;
  id: number;
}

const source: MessageSource<Held> = {
  virtualTypes: { _id: 'Int64' },
  value: (m) => (m.at < 0 ? null : m.bytes.subarray(m.at, m.at + m.length)),
  valueBytes: (m) => m.bytes,
  valueAt: (m) => m.at,
  valueLength: (m) => m.length,
  virtualValue: (_, m) => m.id,
  position: (m) => `${m.id}`,
  row: (m) => m.id,
  describe: (m) => `message ${m.id}`,
  producedAt: () => undefined,
};

const plan = (virtual: string[]): MessagePlan<Held> => ({
  format: 'JSONEachRow',
  source,
  plan: {} as InsertPlan,
  virtual,
  settings: {},
});

/** The values, each between filler bytes in one buffer. */
function held(values: (string | null)[]): Held[] {
  const parts: Buffer[] = [];
  const messages: Held[] = [];
  let at = 0;
  for (const [id, value] of values.entries()) {
    parts.push(Buffer.from('##'));
    at += 2;
    const bytes = value === null ? Buffer.alloc(0) : Buffer.from(value);
    messages.push({ bytes: Buffer.alloc(0), at: value === null ? -1 : at, length: bytes.length, id });
    parts.push(bytes);
    at += bytes.length;
  }
  const all = Buffer.concat(parts);
  return messages.map((m) => ({ ...m, bytes: all }));
}

const text = (chunks: Buffer[]) => Buffer.concat(chunks).toString();

describe("a batch's JSONEachRow text", () => {
  it('copies each object from where it lies, one line each, the virtual columns the mappings use first', () => {
    const messages = held(['{"a":1}', '  {"b":\n2}\r\n', '{}', '[1]', null, '{"c":"x"}']);
    const out = recordsText(plan(['_id']), messages);
    expect(text(out.chunks)).toBe('{"_id":0,"a":1}\n{"_id":1,"b": 2}\n{"_id":2}\n{"_id":5,"c":"x"}\n');
    expect(out.lines).toEqual([0, 1, 2, 5]);
    expect(out.refused.map((r) => r.index)).toEqual([3, 4]);
    expect(text(recordsText(plan([]), messages, [1, 2]).chunks)).toBe('{"b": 2}\n{}\n');
  });

  it('keeps one line per message across chunks, a message larger than a chunk included', () => {
    const big = `{"big":"${'x'.repeat(1_500_000)}",\n"end":1}`;
    const small = Array.from({ length: 20_000 }, (_, i) => `{"i":${i},\n"pad":"${'y'.repeat(40)}"}`);
    const messages = held([...small, big, ...small]);
    const out = recordsText(plan([]), messages);
    expect(out.chunks.length).toBeGreaterThan(2);
    const lines = text(out.chunks).split('\n');
    expect(lines.length).toBe(messages.length + 1);
    expect(lines.at(-1)).toBe('');
    expect(JSON.parse(lines[20_000] as string).end).toBe(1);
    expect(JSON.parse(lines[20_001] as string).i).toBe(0);
  });
});
