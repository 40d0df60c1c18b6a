import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningKafka, startKafka } from './support/kafka.js';
import { kafkaPipe, produce, type TestMessage } from './support/kafka-pipes.js';
import { createPipe, sql, statusOf, waitForState } from './support/runtime.js';
import { startSluice, type TestSluice } from './support/sluice.js';
import { waitFor } from './support/wait.js';

// Kafka pipes against a real Apache Kafka broker (test/support/kafka.ts), with Sluice run as a
// user runs it: runtime and timers on, everything seen through the API.

let kafka: RunningKafka;
let s: TestSluice;

beforeAll(async () => {
  kafka = await startKafka();
  s = await startSluice({
    runtime: true,
    env: { SLUICE_ALLOW_PLAINTEXT_KAFKA: 'true' },
  });
}, 600_000);

afterAll(async () => {
  await s?.close();
  await kafka?.stop();
});

const plaintext = () => `plaintext://${kafka.bootstrap.plaintext}`;

async function rowCount(table: string): Promise<number> {
  const [row] = await sql(s, `SELECT count() AS n FROM kafka.${table}`);
  return Number(row?.n);
}

function waitForRows(table: string, n: number, timeoutMs = 60_000) {
  return waitFor(
    `${n} rows in kafka.${table}`,
    async () => ((await rowCount(table)) >= n ? true : undefined),
    timeoutMs,
  );
}

describe('a Kafka pipe', () => {
  it('ingests every message of several partitions, with every virtual column, and sets aside 1% malformed', async () => {
    const topic = 'virtual-columns';
    await kafka.createTopic(topic, 3);
    const COUNT = 3000;
    const isBad = (i: number) => i % 100 === 42;
    const messages: TestMessage[] = Array.from({ length: COUNT }, (_, i) => ({
      topic,
      partition: i % 3,
      key: `k${i}`,
      headers: { h1: `v${i}`, h2: 'x' },
      timestamp: 1_700_000_000_000n + BigInt(i),
      value: isBad(i)
        ? i % 200 === 42
          ? `{"id": "not a number", "name": "bad ${i}"}`
          : `{"id": ${i}, "name": "unterminated`
        : JSON.stringify({ id: i, name: `n${i}` }),
    }));
    await produce(kafka.connection('plaintext'), messages);
    const virtual = {
      _key: 'String',
      _timestamp: 'DateTime64(3)',
      _partition: 'Int32',
      _offset: 'Int64',
      _topic: 'String',
      _header_keys: 'Array(String)',
      _header_values: 'Array(String)',
      _raw_message: 'String',
    };
    const id = await createPipe(
      s,
      kafkaPipe(
        'virtual',
        { brokers: plaintext(), topics: topic },
        {
          columns: Object.entries(virtual).map(([name, type]) => ({ name: `v${name}`, type })),
          mappings: Object.fromEntries(Object.keys(virtual).map((name) => [`v${name}`, name])),
        },
      ),
    );
    await waitForState(s, id, 'Running');
    const good = messages.filter((_, i) => !isBad(i)).length;
    await waitForRows('virtual', good);
    const rows = await sql(
      s,
      `SELECT id, name, v_key, toUnixTimestamp64Milli(v_timestamp) AS ts, v_partition, v_offset, v_topic,
              v_header_keys, v_header_values, v_raw_message FROM kafka.virtual WHERE id IN (1, 2000) ORDER BY id`,
    );
    expect(rows).toEqual([
      {
        id: 1,
        name: 'n1',
        v_key: 'k1',
        ts: 1_700_000_000_001,
        v_partition: 1,
        v_offset: 0,
        v_topic: topic,
        v_header_keys: ['h1', 'h2'],
        v_header_values: ['v1', 'x'],
        v_raw_message: '{"id":1,"name":"n1"}',
      },
      expect.objectContaining({ id: 2000, v_partition: 2, v_offset: 666, v_key: 'k2000' }),
    ]);
    const errors = await sql(
      s,
      `SELECT source, row, error, raw FROM kafka.virtual_pipes_error ORDER BY row, source`,
    );
    const bad = messages.map((m, i) => ({ m, i })).filter(({ i }) => isBad(i));
    expect(errors).toHaveLength(bad.length);
    for (const { m, i } of bad) {
      expect(errors).toContainEqual(
        expect.objectContaining({ source: `${topic}:${i % 3}:${Math.floor(i / 3)}`, raw: m.value }),
      );
    }
    expect(errors.every((e) => String(e.error).length > 0)).toBe(true);
    const status = await statusOf(s, id);
    expect(status).toMatchObject({ state: 'Running', rowsWritten: good, badRecords: bad.length });
  });
});
