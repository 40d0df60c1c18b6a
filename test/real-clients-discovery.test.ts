import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { avroContainer } from './support/avro.js';
import {
  asCliRows,
  cliKafkaDiscovery,
  cliKinesisDiscovery,
  postgresConnection,
} from './support/discovery-clients.js';
import { type RunningKafka, startKafka } from './support/kafka.js';
import { produce } from './support/kafka-pipes.js';
import { type RunningKinesis, startKinesis } from './support/kinesis.js';
import { openDatabase, type RunningPostgres, startPostgres } from './support/postgres.js';
import { basic, startSluice, type TestSluice } from './support/sluice.js';
import { waitFor } from './support/wait.js';

// The routes the hosted service's clients call beyond pipes themselves, each called with the body
// exactly as the client builds it, against Sluice as a user runs it and real sources.

let s: TestSluice;
let kafka: RunningKafka;
let kinesis: RunningKinesis;
let postgres: RunningPostgres;
let db: { client: pg.Client; port: number };

beforeAll(async () => {
  [kafka, kinesis, postgres] = await Promise.all([startKafka(), startKinesis(), startPostgres()]);
  Object.assign(process.env, kinesis.environment());
  db = await openDatabase(postgres, 'shop');
  s = await startSluice({ runtime: true, logLevel: 'debug' });
}, 600_000);

afterAll(async () => {
  await db?.client.end();
  await s?.close();
  await Promise.all([kafka?.stop(), kinesis?.stop(), postgres?.stop()]);
});

const serviceUrl = () => `/v1/organizations/${s.organizationId}/services/${s.serviceId}`;

/** A key of the test organization with `role`, as an Authorization header. */
async function keyWith(role: string): Promise<string> {
  const key = await s.request({
    method: 'POST',
    url: `/v1/organizations/${s.organizationId}/keys`,
    body: { role },
  });
  expect(key.statusCode).toBe(200);
  return basic(key.json.result.id, key.json.result.secret);
}

describe('pipesCdcScaling', () => {
  it("Terraform's clickhouse_clickpipe_cdc_infrastructure creates, reads back and updates it", async () => {
    // terraform-provider-clickhouse internal/service/clickhouse/resource/clickpipe_cdc_infrastructure.go
    // through internal/api/clickpipe.go: GET until it answers, PATCH the plan, then GET until the
    // values equal the plan (WaitForClickPipeCdcScaling compares them with ==), and Read is a GET.
    const url = `${serviceUrl()}/pipesCdcScaling`;
    const available = await s.request({ method: 'GET', url });
    expect(available.statusCode).toBe(200);
    expect(available.json.result).toEqual({ replicaCpuMillicores: 2000, replicaMemoryGb: 8 });
    for (const plan of [
      { replicaCpuMillicores: 2000, replicaMemoryGb: 8 },
      { replicaCpuMillicores: 4000, replicaMemoryGb: 16 },
    ]) {
      const patched = await s.request({ method: 'PATCH', url, body: plan });
      expect(patched.statusCode, patched.body).toBe(200);
      expect(patched.json).toMatchObject({ status: 200, result: plan });
      const read = await s.request({ method: 'GET', url });
      expect(read.json.result.replicaCpuMillicores).toBe(plan.replicaCpuMillicores);
      expect(read.json.result.replicaMemoryGb).toBe(plan.replicaMemoryGb);
    }
    // The hosted service's rules, each a 400 naming the field; nothing is stored.
    for (const [body, error] of [
      [
        { replicaCpuMillicores: 1500, replicaMemoryGb: 6 },
        'replicaCpuMillicores: Must be a multiple of 1000',
      ],
      [
        { replicaCpuMillicores: 3000, replicaMemoryGb: 8 },
        'replicaMemoryGb: replicaMemoryGb must be 4 times',
      ],
      [
        { replicaCpuMillicores: 40000, replicaMemoryGb: 160 },
        'replicaCpuMillicores: Not between 1000 and 32000',
      ],
      [{ replicaCpuMillicores: 8000 }, 'replicaCpuMillicores: replicaMemoryGb must be 4 times the cores'],
      [{ replicaMemoryGb: '16' }, 'replicaMemoryGb: Expected a number'],
      [{}, 'Must not be empty'],
    ] as const) {
      const refused = await s.request({ method: 'PATCH', url, body });
      expect(refused.statusCode, JSON.stringify(body)).toBe(400);
      expect(refused.json.error).toContain(error);
      expect(refused.json.code, JSON.stringify(body)).toBe('SLUICE_ERR_VALIDATION');
    }
    const kept = await s.request({ method: 'GET', url });
    expect(kept.json.result).toEqual({ replicaCpuMillicores: 4000, replicaMemoryGb: 16 });
    // A read-only key reads it and may not change it.
    const reader = await keyWith('read-only');
    expect((await s.request({ method: 'GET', url, auth: reader })).statusCode).toBe(200);
    const body = { replicaCpuMillicores: 1000, replicaMemoryGb: 4 };
    expect((await s.request({ method: 'PATCH', url, body, auth: reader })).statusCode).toBe(403);
  });
});

describe('pipes/schemaDiscovery', () => {
  const cliKafkaBody = (topics: string, overrides: Record<string, unknown> = {}) =>
    cliKafkaDiscovery(kafka, topics, overrides);

  it("the cloud CLI's Kafka body: the engine types the first messages' fields, usable as columns", async () => {
    await kafka.createTopic('events', 2);
    await produce(
      kafka.connection('plaintext'),
      Array.from({ length: 20 }, (_, i) => ({
        topic: 'events',
        partition: i % 2,
        value: JSON.stringify({
          id: i,
          name: `event ${i}`,
          price: i + 0.5,
          tags: ['a', 'b'],
          at: '2026-01-02 03:04:05',
          ...(i % 4 === 0 ? { note: 'sometimes' } : {}),
          score: i % 3 === 0 ? null : i,
        }),
      })),
    );
    const url = `${s.pipesUrl}/schemaDiscovery`;
    const response = await s.request({ method: 'POST', url, body: cliKafkaBody('events') });
    expect(response.statusCode, response.body).toBe(200);
    expect(asCliRows(response.json.result)).toEqual([
      { name: 'id', type: 'Int64', optional: false },
      { name: 'name', type: 'String', optional: false },
      { name: 'price', type: 'Float64', optional: false },
      { name: 'tags', type: 'Array(String)', optional: false },
      { name: 'at', type: 'DateTime', optional: false },
      { name: 'note', type: 'String', optional: true },
      { name: 'score', type: 'Int64', optional: true },
    ]);
    expect(response.json.result.meta).toMatchObject({ format: 'JSONEachRow', sampledMessages: '20' });
    // Sluice's addition, the wizard's preview: the first records as the engine reads them.
    expect(response.json.result.records).toHaveLength(10);
    for (const record of response.json.result.records) {
      expect(record).toMatchObject({ name: expect.stringMatching(/^event \d+$/), tags: ['a', 'b'] });
    }
    expect(response.body).not.toContain(kafka.users.plain.password);
    // What a user does next: the discovered fields as the columns of a pipe, which create accepts.
    const columns = response.json.result.fields.map(({ name, type }: { name: string; type: string }) => ({
      name,
      type,
    }));
    const created = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: {
        name: 'events',
        source: cliKafkaBody('events').source,
        destination: {
          table: 'events',
          tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
          columns,
        },
      },
    });
    expect(created.statusCode, created.body).toBe(200);
    // Problems are 400s naming the field: an empty topic, a wrong password, a broker that is not there.
    await kafka.createTopic('quiet', 1);
    await kafka.createTopic('garbage', 1);
    await produce(kafka.connection('plaintext'), [{ topic: 'garbage', value: 'not json at all' }]);
    for (const [body, error] of [
      [cliKafkaBody('quiet'), 'source.kafka.topics: quiet holds no messages yet'],
      [cliKafkaBody('garbage'), 'source.kafka.format: the first records do not read as JSONEachRow'],
      [cliKafkaBody('nope'), 'source.kafka.topics: no such topic on the brokers: nope'],
      [
        cliKafkaBody('events', {
          credentials: { username: kafka.users.plain.username, password: 'wrong-password-0' },
        }),
        'source.kafka.credentials: the brokers refused the credentials',
      ],
      [cliKafkaBody('events', { brokers: '127.0.0.1:1' }), 'source.kafka.brokers: cannot reach the brokers'],
      [{ source: {} }, 'source: Required: give one source kind'],
    ] as const) {
      const refused = await s.request({ method: 'POST', url, body });
      expect(refused.statusCode, refused.body).toBe(400);
      expect(refused.json.error).toContain(error);
      expect(refused.json.code).toBe('SLUICE_ERR_VALIDATION');
      expect(refused.body).not.toContain('wrong-password-0');
    }
    expect(s.logs.join('')).not.toContain(kafka.users.plain.password);
    expect(s.logs.join('')).not.toContain('wrong-password-0');
  });

  it("the cloud CLI's Kinesis body: the first records of the stream, typed by the engine", async () => {
    await kinesis.createStream('clicks', 2);
    await kinesis.put(
      'clicks',
      Array.from({ length: 10 }, (_, i) => ({
        key: `user-${i}`,
        data: JSON.stringify({ url: `/p/${i}`, ms: i * 10, ok: i % 2 === 0 }),
      })),
    );
    const body = cliKinesisDiscovery(kinesis, 'clicks');
    const response = await s.request({ method: 'POST', url: `${s.pipesUrl}/schemaDiscovery`, body });
    expect(response.statusCode, response.body).toBe(200);
    expect(asCliRows(response.json.result)).toEqual([
      { name: 'url', type: 'String', optional: false },
      { name: 'ms', type: 'Int64', optional: false },
      { name: 'ok', type: 'Bool', optional: false },
    ]);
    expect(response.json.result.meta).toMatchObject({ sampledRecords: '10' });
    // Avro (a container file per record), two versions of the schema: a field one lacks is optional.
    await kinesis.createStream('avro-clicks', 1);
    const v1 = {
      type: 'record',
      name: 'Click',
      fields: [
        { name: 'id', type: 'long' },
        { name: 'url', type: 'string' },
      ],
    };
    const v2 = { ...v1, fields: [...v1.fields, { name: 'ref', type: ['null', 'string'], default: null }] };
    await kinesis.put('avro-clicks', [
      { key: 'a', data: await avroContainer(v1, [{ id: 1, url: '/a' }]) },
      { key: 'b', data: await avroContainer(v2, [{ id: 2, url: '/b', ref: '/a' }]) },
    ]);
    const avroBody = cliKinesisDiscovery(kinesis, 'avro-clicks');
    avroBody.source.kinesis.format = 'Avro';
    const avroFields = await s.request({
      method: 'POST',
      url: `${s.pipesUrl}/schemaDiscovery`,
      body: avroBody,
    });
    expect(avroFields.statusCode, avroFields.body).toBe(200);
    expect(asCliRows(avroFields.json.result)).toEqual([
      { name: 'id', type: 'Int64', optional: false },
      { name: 'url', type: 'String', optional: false },
      { name: 'ref', type: 'String', optional: true },
    ]);
    body.source.kinesis.streamName = 'missing';
    const missing = await s.request({ method: 'POST', url: `${s.pipesUrl}/schemaDiscovery`, body });
    expect(missing.statusCode).toBe(400);
    expect(missing.json.error).toContain('source.kinesis.streamName: no stream missing');
    expect(missing.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('object storage and PostgreSQL too: the first file as the engine reads it, a table as the pipe makes it', async () => {
    const dir = join(s.dataDir, 'files', 'discover');
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, 'a.ndjson'),
      '{"city": "Lyon", "temp": 11.5}\n{"city": "Paris", "temp": 12, "rain": true}\n',
    );
    const url = `${s.pipesUrl}/schemaDiscovery`;
    const files = await s.request({
      method: 'POST',
      url,
      body: { source: { objectStorage: { format: 'JSONEachRow', url: 'file:///discover/*.ndjson' } } },
    });
    expect(files.statusCode, files.body).toBe(200);
    expect(files.json.result.fields).toEqual([
      { name: 'city', type: 'String', optional: false },
      { name: 'temp', type: 'Float64', optional: false },
      { name: 'rain', type: 'Bool', optional: true },
    ]);
    expect(files.json.result.meta).toMatchObject({ file: 'discover/a.ndjson' });
    // A field a record lacks reads as its type's default, as the pipe writes it.
    expect(files.json.result.records).toEqual([
      { city: 'Lyon', temp: 11.5, rain: false },
      { city: 'Paris', temp: 12, rain: true },
    ]);
    const none = await s.request({
      method: 'POST',
      url,
      body: {
        source: {
          objectStorage: { format: 'JSONEachRow', url: 'file:///discover/*.csv', isContinuous: true },
        },
      },
    });
    expect(none.statusCode).toBe(400);
    expect(none.json.error).toContain('source.objectStorage.url: file:///discover/*.csv matches no file yet');
    expect(none.json.code).toBe('SLUICE_ERR_VALIDATION');
    expect(none.json.error).not.toContain(s.dataDir);

    await db.client.query(
      'CREATE TABLE orders (id int PRIMARY KEY, total numeric(10,2), note text, created timestamptz NOT NULL)',
    );
    const mappings = [{ sourceSchemaName: 'public', sourceTable: 'orders', targetTable: 'orders' }];
    const postgresBody = (password?: string) => ({
      source: { postgres: { ...postgresConnection(db.port, 'shop', password), tableMappings: mappings } },
    });
    const table = await s.request({ method: 'POST', url, body: postgresBody() });
    expect(table.statusCode, table.body).toBe(200);
    expect(table.json.result.fields).toEqual([
      { name: 'id', type: 'Int32', optional: false },
      { name: 'total', type: 'Decimal(10, 2)', optional: true },
      { name: 'note', type: 'String', optional: true },
      { name: 'created', type: "DateTime64(6, 'UTC')", optional: false },
    ]);
    expect(table.json.result.meta).toMatchObject({ sourceTable: 'public.orders', sortingKey: 'id' });
    expect(table.json.result.records).toEqual([]);
    const refused = await s.request({ method: 'POST', url, body: postgresBody('not-the-password') });
    expect(refused.statusCode).toBe(400);
    expect(refused.json.error).toContain('source.postgres.credentials: PostgreSQL refused the credentials');
    expect(refused.json.code).toBe('SLUICE_ERR_VALIDATION');
    expect(refused.body).not.toContain('not-the-password');
  });
});

describe('pipes/postgresTables', () => {
  it("lists the server's tables with their columns, keys, replica identity and what a pipe would hit", async () => {
    await db.client.query('CREATE TABLE events (at timestamptz, what text)');
    await db.client.query('CREATE TABLE logs (line text)');
    await db.client.query('ALTER TABLE logs REPLICA IDENTITY FULL');
    await db.client.query('CREATE SCHEMA crm');
    await db.client.query(
      'CREATE TABLE crm.contacts (id bigint PRIMARY KEY, email text NOT NULL, tags text[])',
    );
    await db.client.query('ALTER TABLE crm.contacts REPLICA IDENTITY NOTHING');
    const body = { source: { postgres: postgresConnection(db.port, 'shop') } };
    const response = await s.request({ method: 'POST', url: `${s.pipesUrl}/postgresTables`, body });
    expect(response.statusCode, response.body).toBe(200);
    const { server, problems, tables } = response.json.result;
    expect(server).toMatchObject({ walLevel: 'logical', mayReplicate: true });
    expect(problems).toEqual([]);
    const byName = Object.fromEntries(
      tables.map((t: { schema: string; table: string }) => [`${t.schema}.${t.table}`, t]),
    );
    expect(Object.keys(byName)).toEqual(['crm.contacts', 'public.events', 'public.logs', 'public.orders']);
    expect(byName['crm.contacts']).toMatchObject({
      primaryKey: ['id'],
      replicaIdentity: 'nothing',
      columns: [
        { name: 'id', type: 'int8', clickhouseType: 'Int64', nullable: false },
        { name: 'email', type: 'text', clickhouseType: 'String', nullable: false },
        { name: 'tags', type: 'text[]', clickhouseType: 'Array(String)', nullable: true },
      ],
    });
    expect(byName['crm.contacts'].problems).toEqual([
      {
        message: expect.stringContaining('crm.contacts is REPLICA IDENTITY NOTHING'),
        replicationModes: ['cdc', 'cdc_only'],
      },
    ]);
    expect(byName['public.events']).toMatchObject({ primaryKey: [], replicaIdentity: 'default' });
    expect(byName['public.events'].problems).toEqual([
      {
        message: expect.stringContaining('public.events has no primary key: add one, or ALTER TABLE'),
        replicationModes: ['cdc', 'snapshot', 'cdc_only'],
      },
    ]);
    expect(byName['public.logs']).toMatchObject({ primaryKey: [], replicaIdentity: 'full', problems: [] });
    expect(byName['public.orders']).toMatchObject({
      primaryKey: ['id'],
      replicaIdentity: 'default',
      problems: [],
    });
    // The connection's problems are 400s naming the field, as at create.
    const refused = await s.request({
      method: 'POST',
      url: `${s.pipesUrl}/postgresTables`,
      body: { source: { postgres: { ...body.source.postgres, database: 'nope' } } },
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json.error).toContain('source.postgres.database');
    expect(refused.json.code).toBe('SLUICE_ERR_VALIDATION');
  });
});

describe('who may read sources', () => {
  it('developer and admin keys may; read-only keys may not; nothing of another organization is reachable', async () => {
    const body = { source: { objectStorage: { format: 'JSONEachRow', url: 'file:///discover/*.ndjson' } } };
    const tables = { source: { postgres: postgresConnection(db.port, 'shop') } };
    const roles = { 'read-only': 403, developer: 200, admin: 200 } as const;
    for (const [role, status] of Object.entries(roles)) {
      const auth = role === 'admin' ? s.admin : await keyWith(role);
      const discovered = await s.request({
        method: 'POST',
        url: `${s.pipesUrl}/schemaDiscovery`,
        body,
        auth,
      });
      expect(discovered.statusCode, `${role}: ${discovered.body}`).toBe(status);
      const listed = await s.request({
        method: 'POST',
        url: `${s.pipesUrl}/postgresTables`,
        body: tables,
        auth,
      });
      expect(listed.statusCode, `${role}: ${listed.body}`).toBe(status);
    }
    const created = await s.request({
      method: 'POST',
      url: '/v1/organizations',
      body: { name: 'elsewhere' },
    });
    const { key } = created.json.result;
    const outsider = basic(key.id, key.secret);
    for (const [method, url, payload] of [
      ['POST', `${s.pipesUrl}/schemaDiscovery`, body],
      ['POST', `${s.pipesUrl}/postgresTables`, tables],
      ['GET', `${serviceUrl()}/pipesCdcScaling`, undefined],
      ['PATCH', `${serviceUrl()}/pipesCdcScaling`, { replicaCpuMillicores: 1000, replicaMemoryGb: 4 }],
    ] as const) {
      const response = await s.request({ method, url, body: payload, auth: outsider });
      expect(response.statusCode, `${method} ${url}`).toBe(404);
    }
    await waitFor('the request lines', async () =>
      s.logs.join('').includes('schemaDiscovery') ? true : undefined,
    );
    expect(s.logs.join('')).not.toContain('"password"');
  });
});
