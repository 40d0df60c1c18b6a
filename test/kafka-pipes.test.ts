import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningKafka, startKafka } from './support/kafka.js';
import {
  claimedToLogEnd,
  kafkaPipe,
  produce,
  type TestMessage,
  VIRTUAL_COLUMNS,
} from './support/kafka-pipes.js';
import { createPipe, sql, statusOf, waitForCommittedToEnd, waitForState } from './support/runtime.js';
import { startSluice, type TestSluice } from './support/sluice.js';
import { type StandInSts, startStandInSts } from './support/sts.js';
import { waitFor } from './support/wait.js';

// Kafka pipes against a real Apache Kafka broker (test/support/kafka.ts), with Sluice run as a
// user runs it: runtime and timers on, everything seen through the API.

let kafka: RunningKafka;
let s: TestSluice;

beforeAll(async () => {
  kafka = await startKafka();
  s = await startSluice({
    runtime: true,
    // The test broker is 127.0.0.1: MSK IAM tokens are signed for the node's region.
    env: { SLUICE_ALLOW_PLAINTEXT_KAFKA: 'true', AWS_REGION: kafka.mskIam.region },
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
    const virtual = VIRTUAL_COLUMNS;
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

  it('reads several topics into one table', async () => {
    await kafka.createTopic('several-a', 2);
    await kafka.createTopic('several-b', 1);
    const messages = Array.from({ length: 300 }, (_, i) => ({
      topic: i % 3 === 0 ? 'several-b' : 'several-a',
      value: JSON.stringify({ id: i, name: `n${i}` }),
    }));
    await produce(kafka.connection('plaintext'), messages);
    await createPipe(
      s,
      kafkaPipe(
        'several',
        { brokers: plaintext(), topics: 'several-a, several-b' },
        { columns: [{ name: 'topic', type: 'String' }], mappings: { topic: '_topic' } },
      ),
    );
    await waitForRows('several', 300);
    expect(
      await sql(
        s,
        'SELECT topic, count() AS n, uniqExact(id) AS ids FROM kafka.several GROUP BY topic ORDER BY topic',
      ),
    ).toEqual([
      { topic: 'several-a', n: 200, ids: 200 },
      { topic: 'several-b', n: 100, ids: 100 },
    ]);
  });
  it('passes a Null table each message once, equal messages as many times as they come, to its view', async () => {
    await kafka.createTopic('passed', 2);
    const COUNT = 600;
    // Every value twice: a view deduplicating nothing holds each twice.
    const messages = Array.from({ length: COUNT }, (_, i) => ({
      topic: 'passed',
      partition: i % 2,
      value: JSON.stringify({ id: i % (COUNT / 2), name: `n${i % (COUNT / 2)}` }),
    }));
    await produce(kafka.connection('plaintext'), messages);
    await sql(s, 'CREATE DATABASE IF NOT EXISTS kafka');
    await sql(s, 'CREATE TABLE kafka.passed (id UInt64, name String) ENGINE = Null');
    await sql(s, 'CREATE TABLE kafka.passed_out (id UInt64, name String) ENGINE = MergeTree ORDER BY id');
    await sql(
      s,
      'CREATE MATERIALIZED VIEW kafka.passing TO kafka.passed_out AS SELECT id, name FROM kafka.passed',
    );
    const body = kafkaPipe('passed', { brokers: plaintext(), topics: 'passed' });
    const { tableDefinition: _, ...destination } = body.destination;
    const id = await createPipe(s, { ...body, destination: { ...destination, managedTable: false } });
    await waitForRows('passed_out', COUNT);
    await waitFor(
      'the pipe to count every message',
      async () => ((await statusOf(s, id)).rowsWritten === COUNT ? true : undefined),
      30_000,
    );
    expect(
      await sql(
        s,
        'SELECT count() AS n, uniqExact(id) AS ids, min(c) AS least, max(c) AS most FROM (SELECT id, count() AS c FROM kafka.passed_out GROUP BY id)',
      ),
    ).toEqual([{ n: COUNT / 2, ids: COUNT / 2, least: 2, most: 2 }]);
  });

  it('loads every byte of a backlog whose fetched records fill buffers that serve again (pooled sections and texts)', async () => {
    // 40,000 messages of about 1.5 KB in 2 partitions: fetched sections of 1-4 MB, which come
    // from a pool and serve again once their records are loaded (src/pipes/sources/kafka/sections.ts).
    // A buffer handed out again while a record still read it would change some row's body.
    await kafka.createTopic('pooled', 2);
    const COUNT = 40_000;
    const body = (i: number) => String(i).padStart(8, '0').repeat(180);
    const messages = Array.from({ length: COUNT }, (_, i) => ({
      topic: 'pooled',
      partition: i % 2,
      value: JSON.stringify({ id: i, name: body(i) }),
    }));
    await produce(kafka.connection('plaintext'), messages, 1_000);
    await createPipe(s, kafkaPipe('pooled', { brokers: plaintext(), topics: 'pooled' }));
    await waitForRows('pooled', COUNT);
    expect(
      await sql(
        s,
        "SELECT count() AS n, uniqExact(id) AS ids, countIf(name != repeat(leftPad(toString(id), 8, '0'), 180)) AS changed FROM kafka.pooled",
      ),
    ).toEqual([{ n: COUNT, ids: COUNT, changed: 0 }]);
  });
});

describe("a new Kafka pipe's first batch", () => {
  it('is small and runs alone on a backlog: no other batch is claimed until it commits', async () => {
    // 200,000 small messages in 4 partitions: one fetch brings more than a whole batch's 100,000
    // messages, which would be claimed beside the first batch at once if it did not run alone
    // (src/pipes/sources/kafka/reader.ts: until it commits, one batch in flight and no more
    // fetched than the first batch takes).
    await kafka.createTopic('first', 4);
    const COUNT = 200_000;
    const messages = Array.from({ length: COUNT }, (_, i) => ({
      topic: 'first',
      partition: i % 4,
      value: JSON.stringify({ id: i, name: `message ${i}` }),
    }));
    await produce(kafka.connection('plaintext'), messages, 5_000);
    const id = await createPipe(s, kafkaPipe('first', { brokers: plaintext(), topics: 'first' }));
    // The open batches and the rows written, read in one store transaction: of one moment.
    let [mostOpen, firstRows] = [0, 0];
    while (firstRows === 0) {
      const [open, progress] = await s.sluice.store.transaction(
        async (repos) => [await repos.progress.openBatches(id), await repos.progress.get(id)] as const,
      );
      firstRows = progress?.rowsWritten ?? 0;
      if (firstRows === 0) mostOpen = Math.max(mostOpen, open.length);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(mostOpen).toBe(1);
    expect(firstRows).toBeLessThanOrEqual(10_000);
    await waitForRows('first', COUNT);
    expect(await sql(s, 'SELECT count() AS n, uniqExact(id) AS ids FROM kafka.first')).toEqual([
      { n: COUNT, ids: COUNT },
    ]);
  });
});

describe('a Kafka pipe reading transactions', () => {
  it("skips the records of aborted transactions (read committed), written by Kafka's own Java producer", async () => {
    const topic = 'transactions';
    await kafka.createTopic(topic, 1);
    await produce(
      kafka.connection('plaintext'),
      Array.from({ length: 10 }, (_, i) => ({
        topic,
        value: JSON.stringify({ id: 1000 + i, name: 'plain' }),
      })),
    );
    await kafka.produceTransactions(topic, 0, [
      'commit:0-99',
      'abort:100-199',
      'commit:200-299',
      'abort:300-349',
      'commit:350-399',
    ]);
    const id = await createPipe(s, {
      ...kafkaPipe('transactions', { brokers: plaintext(), topics: topic }),
      settings: { streaming_max_insert_wait_ms: 500 },
    });
    await waitForRows('transactions', 260);
    // The partition committed to its end: aborted records read as data would be in the table now.
    await waitForCommittedToEnd(s, id, claimedToLogEnd(1));
    const [row] = await sql(
      s,
      `SELECT count() AS n, uniqExact(id) AS ids, countIf(id BETWEEN 100 AND 199 OR id BETWEEN 300 AND 349) AS aborted
       FROM kafka.transactions`,
    );
    expect(row).toEqual({ n: 260, ids: 260, aborted: 0 });
    expect(await statusOf(s, id)).toMatchObject({ rowsWritten: 260, badRecords: 0 });
  });
});

describe('Kafka authentication', () => {
  const modes: [string, () => Record<string, unknown>][] = [
    [
      'SASL PLAIN over TLS',
      () => ({
        authentication: 'PLAIN',
        brokers: kafka.bootstrap.saslSsl,
        credentials: pick(kafka.users.plain),
        caCertificate: kafka.caPem,
      }),
    ],
    [
      'SCRAM-SHA-256 over TLS',
      () => ({
        authentication: 'SCRAM-SHA-256',
        brokers: kafka.bootstrap.saslSsl,
        credentials: pick(kafka.users.scramSha256),
        caCertificate: kafka.caPem,
      }),
    ],
    [
      'SCRAM-SHA-512 over TLS',
      () => ({
        authentication: 'SCRAM-SHA-512',
        brokers: kafka.bootstrap.saslSsl,
        credentials: pick(kafka.users.scramSha512),
        caCertificate: kafka.caPem,
      }),
    ],
    [
      'MUTUAL_TLS',
      () => ({
        authentication: 'MUTUAL_TLS',
        brokers: kafka.bootstrap.ssl,
        credentials: { certificate: kafka.clientCertPem, privateKey: kafka.clientKeyPem },
        caCertificate: kafka.caPem,
      }),
    ],
    [
      'MSK IAM_USER',
      () => ({
        authentication: 'IAM_USER',
        brokers: kafka.bootstrap.saslSsl,
        credentials: { accessKeyId: kafka.mskIam.accessKeyId, secretKey: kafka.mskIam.secretKey },
        caCertificate: kafka.caPem,
      }),
    ],
  ];

  // MSK IAM: SASL OAUTHBEARER with tokens from AWS's signer, each checked by the broker's stand-in
  // for MSK (test/support/kafka/MskIamValidator.java verifies the SigV4 signature with the key).
  it.each(modes)(
    '%s: ingests, and no secret appears in the pipe, its status or the logs',
    async (name, source) => {
      const topic = `auth-${name.replace(/[^A-Za-z0-9]+/g, '-').toLowerCase()}`;
      const table = topic.replace(/-/g, '_');
      await kafka.createTopic(topic, 1);
      await produce(
        kafka.connection('plaintext'),
        Array.from({ length: 50 }, (_, i) => ({ topic, value: JSON.stringify({ id: i, name: `n${i}` }) })),
      );
      const config = source();
      const id = await createPipe(s, kafkaPipe(table, { ...config, topics: topic }));
      await waitForRows(table, 50);
      const pipe = await s.request({ method: 'GET', url: `${s.pipesUrl}/${id}` });
      const secrets = Object.values(config.credentials as Record<string, string>).filter(
        (v) => !v.includes('BEGIN CERTIFICATE'),
      );
      for (const secret of secrets) {
        expect(JSON.stringify(pipe.json)).not.toContain(secret);
        expect(JSON.stringify(await statusOf(s, id))).not.toContain(secret);
        expect(s.logs.join('\n')).not.toContain(secret);
      }
    },
  );

  it('refuses at create, naming the field: a wrong password, a wrong MSK IAM key, a missing topic, no CA for a private CA, Protobuf, plaintext without the setting', async () => {
    await kafka.createTopic('checks', 1);
    const base = {
      brokers: kafka.bootstrap.saslSsl,
      topics: 'checks',
      authentication: 'SCRAM-SHA-256',
      caCertificate: kafka.caPem,
    };
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [
        { ...base, credentials: { ...pick(kafka.users.scramSha256), password: 'wrong-password' } },
        'source.kafka.credentials',
        /refused the credentials/,
      ],
      [
        { ...base, credentials: pick(kafka.users.scramSha256), topics: 'checks, nope-1, nope-2' },
        'source.kafka.topics',
        /nope-1, nope-2/,
      ],
      [
        { ...base, credentials: pick(kafka.users.scramSha256), caCertificate: undefined },
        'source.kafka.caCertificate',
        /TLS/,
      ],
      [
        { ...base, credentials: pick(kafka.users.scramSha256), format: 'Protobuf' },
        'source.kafka.format',
        /not supported yet/,
      ],
      [
        {
          ...base,
          authentication: 'IAM_USER',
          credentials: { accessKeyId: kafka.mskIam.accessKeyId, secretKey: 'wrong-password' },
        },
        'source.kafka.credentials',
        /refused the credentials/,
      ],
    ];
    for (const [kafkaSource, path, message] of cases) {
      const response = await s.request({
        method: 'POST',
        url: s.pipesUrl,
        body: kafkaPipe('refused', kafkaSource),
      });
      expect(response.statusCode, JSON.stringify(response.json)).toBe(400);
      expect(JSON.stringify(response.json)).toContain(path);
      expect(JSON.stringify(response.json)).toMatch(message);
      expect(JSON.stringify(response.json)).not.toContain('wrong-password');
    }
    const strict = await startSluice({ runtime: true });
    try {
      const response = await strict.request({
        method: 'POST',
        url: strict.pipesUrl,
        body: kafkaPipe('refused', { brokers: plaintext(), topics: 'checks' }),
      });
      expect(response.statusCode).toBe(400);
      expect(JSON.stringify(response.json)).toContain('SLUICE_ALLOW_PLAINTEXT_KAFKA');
      const list = await strict.request({ method: 'GET', url: strict.pipesUrl });
      expect(list.json.result).toEqual([]);
    } finally {
      await strict.close();
    }
  });
});

describe('MSK IAM_ROLE, with a stand-in STS (mocked: STS cannot run here)', () => {
  let sts: StandInSts;
  const saved = { ...process.env };

  beforeAll(async () => {
    // The role's temporary keys, which the broker's MSK stand-in accepts only with their session token.
    sts = await startStandInSts(kafka.mskIam.role);
    Object.assign(process.env, sts.environment(kafka.mskIam.region));
  });
  afterAll(async () => {
    process.env = saved;
    await sts?.close();
  });

  const source = (iamRole: string, topic: string) => ({
    authentication: 'IAM_ROLE',
    iamRole,
    brokers: kafka.bootstrap.saslSsl,
    topics: topic,
    caCertificate: kafka.caPem,
  });

  it('assumes the role with the node’s own credentials and signs its tokens with the temporary keys', async () => {
    await kafka.createTopic('by-role', 1);
    await produce(
      kafka.connection('plaintext'),
      Array.from({ length: 50 }, (_, i) => ({
        topic: 'by-role',
        value: JSON.stringify({ id: i, name: `n${i}` }),
      })),
    );
    await createPipe(s, kafkaPipe('by_role', source('arn:aws:iam::123456789012:role/reader', 'by-role')));
    await waitForRows('by_role', 50);
    // The organization's id is the ExternalId: a role can demand it in its trust policy.
    expect(sts.assumed).toContain(`arn:aws:iam::123456789012:role/reader for ${s.organizationId}`);
  });

  it('a role it may not assume is a 400 at create naming iamRole', async () => {
    const response = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: kafkaPipe('refused_role', source('arn:aws:iam::123456789012:role/admin', 'by-role')),
    });
    expect(response.statusCode, JSON.stringify(response.json)).toBe(400);
    expect(response.json.error).toContain('source.kafka.iamRole: cannot assume iamRole');
    expect(response.json.error).toContain('(AccessDenied)');
    expect(response.json.code).toBe('SLUICE_ERR_VALIDATION');
    // STS's own message would name this node's account and role: a tenant sees only the code.
    expect(response.json.error).not.toContain('not allowed to assume this role');
  });
});

function pick(user: { username: string; password: string }) {
  return { username: user.username, password: user.password };
}
