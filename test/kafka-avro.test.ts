import avro from 'avsc';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { avroContainer } from './support/avro.js';
import { type RunningKafka, startKafka } from './support/kafka.js';
import { kafkaPipe, produce, type TestMessage, VIRTUAL_COLUMNS } from './support/kafka-pipes.js';
import { createPipe, sql, statusOf, waitForState } from './support/runtime.js';
import { type RunningRegistry, startSchemaRegistry } from './support/schema-registry.js';
import { startSluice, type TestSluice } from './support/sluice.js';
import { waitFor } from './support/wait.js';

// Avro Kafka pipes against a real broker, Sluice run as a user runs it. Messages are encoded by
// avsc (an Avro implementation independent of Sluice's); AvroConfluent's schemas come from the
// tests' own https schema registry (test/support/schema-registry.ts: Confluent's cannot run here).

let kafka: RunningKafka;
let registry: RunningRegistry;
let s: TestSluice;

beforeAll(async () => {
  [kafka, registry] = await Promise.all([startKafka(), startSchemaRegistry()]);
  s = await startSluice({ runtime: true, env: { SLUICE_ALLOW_PLAINTEXT_KAFKA: 'true' } });
}, 600_000);

afterAll(async () => {
  await s?.close();
  await registry?.close();
  await kafka?.stop();
});

const plaintext = () => `plaintext://${kafka.bootstrap.plaintext}`;
const registryConfig = () => ({
  url: registry.url,
  authentication: 'PLAIN',
  caCertificate: registry.caPem,
  credentials: { username: registry.username, password: registry.password },
});

async function rowCount(table: string): Promise<number> {
  const [row] = await sql(s, `SELECT count() AS n FROM kafka.${table}`);
  return Number(row?.n);
}

function waitForRows(table: string, n: number) {
  return waitFor(
    `${n} rows in kafka.${table}`,
    async () => ((await rowCount(table)) >= n ? true : undefined),
    60_000,
  );
}

const V1 = {
  type: 'record',
  name: 'Event',
  namespace: 'test',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'name', type: 'string' },
    { name: 'score', type: ['null', 'double'], default: null },
    { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
  ],
};
// The next version of the schema: a field added with a default (a compatible change).
const V2 = { ...V1, fields: [...V1.fields, { name: 'tag', type: 'string', default: 'none' }] };

function confluent(id: number, datum: Buffer): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(id, 1);
  return Buffer.concat([prefix, datum]);
}

describe('an AvroConfluent Kafka pipe', () => {
  it('reads each schema version from the registry, fills every virtual column, and sets aside 1% bad messages', async () => {
    const topic = 'avro-confluent';
    await kafka.createTopic(topic, 2);
    const [v1, v2] = [registry.register(V1), registry.register(V2)];
    const [t1, t2] = [avro.Type.forSchema(V1 as avro.Schema), avro.Type.forSchema(V2 as avro.Schema)];
    const COUNT = 2000;
    const isBad = (i: number) => i % 100 === 42;
    const value = (i: number): Buffer => {
      const record = { id: i, name: `n${i}`, score: i % 2 ? i / 2 : null, at: 1_700_000_000_000 + i };
      if (i % 300 === 42) return Buffer.from(JSON.stringify(record));
      if (i % 300 === 142) return confluent(999, t1.toBuffer(record));
      if (i % 300 === 242) return confluent(v1, t1.toBuffer(record).subarray(0, 2));
      return i < COUNT / 2
        ? confluent(v1, t1.toBuffer(record))
        : confluent(v2, t2.toBuffer({ ...record, tag: `t${i}` }));
    };
    const messages: TestMessage[] = Array.from({ length: COUNT }, (_, i) => ({
      topic,
      partition: i % 2,
      key: `k${i}`,
      headers: { h: `v${i}` },
      timestamp: 1_700_000_000_000n + BigInt(i),
      value: value(i),
    }));
    await produce(kafka.connection('plaintext'), messages);
    const virtual = VIRTUAL_COLUMNS;
    const body = kafkaPipe(
      'confluent',
      { format: 'AvroConfluent', brokers: plaintext(), topics: topic, schemaRegistry: registryConfig() },
      {
        columns: [
          { name: 'score', type: 'Nullable(Float64)' },
          { name: 'at', type: 'DateTime64(3)' },
          { name: 'tag', type: 'String' },
          ...Object.entries(virtual).map(([name, type]) => ({ name: `v${name}`, type })),
        ],
        mappings: {
          score: 'score',
          at: 'at',
          tag: 'tag',
          ...Object.fromEntries(Object.keys(virtual).map((name) => [`v${name}`, name])),
        },
      },
    );
    const id = await createPipe(s, body);
    await waitForState(s, id, 'Running');
    const good = messages.filter((_, i) => !isBad(i)).length;
    await waitForRows('confluent', good);
    const rows = await sql(
      s,
      `SELECT id, name, score, toUnixTimestamp64Milli(at) AS at, tag, v_key, toUnixTimestamp64Milli(v_timestamp) AS ts,
              v_partition, v_offset, v_topic, v_header_keys, v_header_values, hex(v_raw_message) AS raw
       FROM kafka.confluent WHERE id IN (5, 1501) ORDER BY id`,
    );
    expect(rows).toEqual([
      {
        id: 5,
        name: 'n5',
        score: 2.5,
        at: 1_700_000_000_005,
        // Version 1 has no tag: the column's default, as a JSON message without the key gets.
        tag: '',
        v_key: 'k5',
        ts: 1_700_000_000_005,
        v_partition: 1,
        v_offset: 2,
        v_topic: topic,
        v_header_keys: ['h'],
        v_header_values: ['v5'],
        raw: value(5).toString('hex').toUpperCase(),
      },
      expect.objectContaining({ id: 1501, tag: 't1501', v_partition: 1, v_offset: 750 }),
    ]);
    const [sums] = await sql(s, 'SELECT uniqExact(id) AS ids, sum(id) AS total FROM kafka.confluent');
    const goodIds = messages.map((_, i) => i).filter((i) => !isBad(i));
    expect(sums).toEqual({ ids: good, total: goodIds.reduce((a, b) => a + b, 0) });

    const errors = await sql(
      s,
      'SELECT source, error, raw FROM kafka.confluent_pipes_error ORDER BY row, source',
    );
    const bad = messages.map((_, i) => i).filter(isBad);
    expect(errors).toHaveLength(bad.length);
    const reasons: [number, RegExp][] = [
      [42, /Confluent wire format/],
      [142, /schema id 999 is not in the schema registry/],
      [242, /the record data ends before the record does/],
    ];
    for (const [i, reason] of reasons) {
      const source = `${topic}:${i % 2}:${Math.floor(i / 2)}`;
      const error = errors.find((e) => e.source === source);
      expect(error, source).toMatchObject({ raw: value(i).toString('base64') });
      expect(String(error?.error)).toMatch(reason);
    }
    // Each schema id is asked of the registry once, whatever the number of messages naming it.
    expect(registry.lookups()).toBeLessThanOrEqual(3);
    const status = await statusOf(s, id);
    expect(status).toMatchObject({ state: 'Running', rowsWritten: good, badRecords: bad.length });
    const pipe = await s.request({ method: 'GET', url: `${s.pipesUrl}/${id}` });
    expect(JSON.stringify(pipe.json)).not.toContain(registry.password);
    expect(JSON.stringify(status)).not.toContain(registry.password);
    expect(s.logs.join('\n')).not.toContain(registry.password);
  });

  it('refuses at create, naming the field: the registry refuses the credentials, its CA is not given, a sample is not Avro', async () => {
    const topic = 'avro-checks';
    await kafka.createTopic(topic, 1);
    await produce(kafka.connection('plaintext'), [{ topic, value: '{"id": 1, "name": "json, not avro"}' }]);
    const base = { format: 'AvroConfluent', brokers: plaintext(), topics: topic };
    const before = (await s.request({ method: 'GET', url: s.pipesUrl })).json.result.length;
    const cases: [Record<string, unknown>, boolean, string, RegExp][] = [
      [
        {
          ...base,
          schemaRegistry: { ...registryConfig(), credentials: { username: 'u', password: 'wrong-password' } },
        },
        false,
        'source.kafka.schemaRegistry.credentials',
        /refused the credentials/,
      ],
      [
        { ...base, schemaRegistry: { ...registryConfig(), caCertificate: undefined } },
        false,
        'source.kafka.schemaRegistry.caCertificate',
        /TLS/,
      ],
      [
        { ...base, schemaRegistry: registryConfig() },
        true,
        'source.validateSamples',
        /offset 0: .*Confluent wire format/,
      ],
    ];
    for (const [source, validateSamples, path, message] of cases) {
      const body = kafkaPipe('refused', source);
      (body.source as Record<string, unknown>).validateSamples = validateSamples;
      const response = await s.request({ method: 'POST', url: s.pipesUrl, body });
      expect(response.statusCode, JSON.stringify(response.json)).toBe(400);
      expect(JSON.stringify(response.json)).toContain(path);
      expect(JSON.stringify(response.json)).toMatch(message);
      expect(JSON.stringify(response.json)).not.toContain('wrong-password');
    }
    expect((await s.request({ method: 'GET', url: s.pipesUrl })).json.result).toHaveLength(before);
  });
});

describe('an Avro Kafka pipe (each message a container file with its schema)', () => {
  it('reads null and deflate containers, a message of several records unless virtual columns need one, and sets aside a record only the engine finds broken', async () => {
    const topic = 'avro-container';
    await kafka.createTopic(topic, 1);
    const schema = { type: 'record', name: 'Row', fields: V1.fields.slice(0, 2) };
    const messages: TestMessage[] = [];
    for (let i = 0; i < 300; i += 1) {
      if (i === 150) {
        const records = [0, 1, 2].map((n) => ({ id: 10_000 + n, name: `multi${n}` }));
        messages.push({ topic, value: await avroContainer(schema, records, 'deflate') });
      } else if (i === 151) {
        messages.push({ topic, value: 'not a container file' });
      } else if (i === 152) {
        // A sound frame whose record says its name is 63 bytes long: only the engine can tell.
        const file = await avroContainer(schema, [{ id: 1, name: 'x' }], 'null');
        file[file.length - 16 - 2] = 0x7e;
        messages.push({ topic, value: file });
      } else {
        messages.push({
          topic,
          value: await avroContainer(schema, [{ id: i, name: `n${i}` }], i % 2 ? 'deflate' : 'null'),
        });
      }
    }
    await produce(kafka.connection('plaintext'), messages);
    const source = { format: 'Avro', brokers: plaintext(), topics: topic };
    const withOffset = await createPipe(
      s,
      kafkaPipe('container_offsets', source, {
        columns: [{ name: 'offset', type: 'UInt64' }],
        mappings: { offset: '_offset' },
      }),
    );
    await createPipe(s, kafkaPipe('container_rows', source));
    await waitForRows('container_offsets', 297);
    await waitForRows('container_rows', 300);
    expect(
      await sql(s, 'SELECT id, name, offset FROM kafka.container_offsets WHERE id IN (7, 8) ORDER BY id'),
    ).toEqual([
      { id: 7, name: 'n7', offset: 7 },
      { id: 8, name: 'n8', offset: 8 },
    ]);
    const [multi] = await sql(s, "SELECT count() AS n FROM kafka.container_rows WHERE name LIKE 'multi%'");
    expect(multi).toEqual({ n: 3 });
    const errors = await sql(s, 'SELECT source, error FROM kafka.container_offsets_pipes_error ORDER BY row');
    expect(errors).toEqual([
      { source: `${topic}:0:150`, error: expect.stringMatching(/holds 3 records/) },
      { source: `${topic}:0:151`, error: expect.stringMatching(/not an Avro container file/) },
      { source: `${topic}:0:152`, error: expect.stringMatching(/EOF/) },
    ]);
    expect(await statusOf(s, withOffset)).toMatchObject({
      state: 'Running',
      rowsWritten: 297,
      badRecords: 3,
    });
    expect(await sql(s, 'SELECT source FROM kafka.container_rows_pipes_error ORDER BY row')).toEqual([
      { source: `${topic}:0:151` },
      { source: `${topic}:0:152` },
    ]);
  });
});
