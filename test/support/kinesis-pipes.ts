import { afterAll, beforeAll, expect } from 'vitest';
import { KINESIS_CREDENTIALS, type PutResult, type RunningKinesis, type StreamTools } from './kinesis.js';
import { createPipe, sql, statusOf, waitForState } from './runtime.js';
import { startSluice, type TestSluice } from './sluice.js';
import { waitFor } from './wait.js';

// Helpers of the Kinesis pipe tests: pipe bodies as a user writes them.

/** A Kinesis server, the proxy Sluice reaches it through, and a Sluice that runs pipes. */
export interface KinesisAndSluice<K extends RunningKinesis, P> {
  kinesis: K;
  proxy: P;
  s: TestSluice;
}

/**
 * Before the tests of the file (or of the enclosing describe): starts a Kinesis server
 * (`startServer`), a proxy in front of it (`startProxy`, given the server's endpoint), and a Sluice
 * run as a user runs it (runtime on) that reaches the server through the proxy, the SDK's own way
 * (the server's environment, AWS_ENDPOINT_URL_KINESIS the proxy's); hands the three to `ready`.
 * After those tests it stops Sluice, then the proxy, then the server.
 */
export function useKinesisAndSluice<
  K extends RunningKinesis,
  P extends { endpoint: string; stop(): Promise<void> },
>(
  startServer: () => Promise<K>,
  startProxy: (upstream: string) => Promise<P>,
  ready: (started: KinesisAndSluice<K, P>) => unknown,
): void {
  let started: Partial<KinesisAndSluice<K, P>> = {};
  beforeAll(async () => {
    started = {};
    const kinesis = await startServer();
    started.kinesis = kinesis;
    const proxy = await startProxy(kinesis.endpoint);
    started.proxy = proxy;
    Object.assign(process.env, { ...kinesis.environment(), AWS_ENDPOINT_URL_KINESIS: proxy.endpoint });
    const s = await startSluice({ runtime: true });
    started.s = s;
    await ready({ kinesis, proxy, s });
  }, 120_000);
  afterAll(async () => {
    await started.s?.close();
    await started.proxy?.stop();
    await started.kinesis?.stop();
  });
}

/** Kinesis's virtual columns and the column types they are documented to fill (README). */
export const KINESIS_VIRTUAL_COLUMNS = {
  _key: 'String',
  _timestamp: 'DateTime64(3)',
  _stream: 'String',
  _shard_id: 'String',
  _sequence_number: 'String',
  _raw_message: 'String',
};

/**
 * A Kinesis pipe into `kinesis.<table>` with columns id UInt64 and name String, plus extra
 * mappings; the source's fields override the defaults (TRIM_HORIZON, an access key).
 */
export function kinesisBody(
  table: string,
  kinesis: Record<string, unknown>,
  extra: {
    columns?: { name: string; type: string }[];
    mappings?: Record<string, string>;
    /** Into a table the test made itself (managedTable false). */
    unmanaged?: boolean;
    replicas?: number;
    validateSamples?: boolean;
  } = {},
) {
  const mappings = { id: 'id', name: 'name', ...(extra.mappings ?? {}) };
  return {
    name: table,
    source: {
      kinesis: {
        region: 'us-east-1',
        format: 'JSONEachRow',
        iteratorType: 'TRIM_HORIZON',
        authentication: 'IAM_USER',
        accessKey: {
          accessKeyId: KINESIS_CREDENTIALS.accessKeyId,
          secretKey: KINESIS_CREDENTIALS.secretAccessKey,
        },
        ...kinesis,
      },
      ...(extra.validateSamples ? { validateSamples: true } : {}),
    },
    destination: {
      database: 'kinesis',
      table,
      ...(extra.unmanaged
        ? { managedTable: false }
        : { tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] } }),
      columns: [{ name: 'id', type: 'UInt64' }, { name: 'name', type: 'String' }, ...(extra.columns ?? [])],
    },
    fieldMappings: Object.entries(mappings).map(([destinationField, sourceField]) => ({
      sourceField,
      destinationField,
    })),
    scaling: { replicas: extra.replicas ?? 1 },
    settings: { streaming_max_insert_wait_ms: 500 },
  };
}

/** Records `{"id": i, "name": "n<i>"}` for i in [from, from + count), each with key `k<i>`. */
export function records(from: number, count: number) {
  return Array.from({ length: count }, (_, n) => {
    const i = from + n;
    return { key: `k${i}`, data: JSON.stringify({ id: i, name: `n${i}` }) };
  });
}

/**
 * For waitForCommittedToEnd (runtime.ts): a Kinesis pipe claimed, in the store's cursor (per
 * shard, the last sequence number claimed), the last record of `puts` on each shard they wrote to.
 */
export function claimedToLastPut(puts: PutResult[]) {
  const last = new Map<string, string>();
  for (const { shardId, sequenceNumber } of puts) {
    const seen = last.get(shardId);
    if (seen === undefined || BigInt(sequenceNumber) > BigInt(seen)) last.set(shardId, sequenceNumber);
  }
  return (cursor: { shards?: Record<string, string> } | null) =>
    [...last].every(([shard, sequenceNumber]) => cursor?.shards?.[shard] === sequenceNumber);
}

export const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

export async function rowCount(s: TestSluice, table: string): Promise<number> {
  const [row] = await sql(s, `SELECT count() AS n FROM kinesis.${table}`);
  return Number(row?.n);
}

export function waitForRows(s: TestSluice, table: string, n: number, timeoutMs = 60_000) {
  return waitFor(
    `${n} rows in kinesis.${table}`,
    async () => ((await rowCount(s, table)) >= n ? true : undefined),
    timeoutMs,
  );
}

/** The ids in kinesis.<table>, in order. */
export async function ids(s: TestSluice, table: string): Promise<number[]> {
  const rows = await sql(s, `SELECT id FROM kinesis.${table} ORDER BY id`);
  return rows.map((row) => Number(row.id));
}

/**
 * A stream split before the pipe starts and merged while it runs, read by two replicas with the
 * source's fields: every record once, and per partition key in the order Kinesis holds them; the
 * closed shards end up finished and their children read.
 */
export async function splitAndMerge(
  s: TestSluice,
  kinesis: StreamTools,
  stream: string,
  source: Record<string, unknown>,
): Promise<void> {
  await kinesis.createStream(stream, 2);
  const KEYS = 40;
  const round = (n: number) =>
    Array.from({ length: KEYS }, (_, key) => ({
      key: `key-${key}`,
      data: JSON.stringify({ id: key, name: `round ${n}`, n }),
    }));
  const rounds = (from: number, to: number) => range(from, to - from).flatMap(round);
  const [first, second] = (await kinesis.shards(stream)).map((shard) => shard.ShardId as string);
  // Before the pipe starts: parents with more records than one GetRecords page, and children
  // with newer ones, which a reader not waiting for the parents would load first.
  const ROUNDS = 300;
  await kinesis.put(stream, rounds(0, ROUNDS));
  const [low, high] = await kinesis.split(stream, first as string);
  await kinesis.put(stream, rounds(ROUNDS, ROUNDS + 10));
  // When each row landed: a batch's rows share the time their batch was read.
  await sql(s, 'CREATE DATABASE IF NOT EXISTS kinesis');
  await sql(
    s,
    `CREATE TABLE kinesis.${stream} (id UInt64, name String, n UInt32, landed DateTime64(6) DEFAULT now64(6))
     ENGINE = MergeTree ORDER BY (id, n)`,
  );
  const id = await createPipe(
    s,
    kinesisBody(
      stream,
      { streamName: stream, ...source },
      { unmanaged: true, replicas: 2, columns: [{ name: 'n', type: 'UInt32' }], mappings: { n: 'n' } },
    ),
  );
  await waitForState(s, id, 'Running');
  // While it runs: a merge, and more records into the merged shard.
  const merged = await kinesis.merge(stream, high, second as string);
  await kinesis.put(stream, rounds(ROUNDS + 10, ROUNDS + 15));
  const total = KEYS * (ROUNDS + 15);
  await waitForRows(s, stream, total);
  expect(await sql(s, `SELECT count() AS rows, uniqExact(id, n) AS once FROM kinesis.${stream}`)).toEqual([
    { rows: total, once: total },
  ]);
  // Per key, rows in the order they landed have rounds in order.
  const disorder = await sql(
    s,
    `SELECT id FROM (SELECT id, groupArray(n) AS ns FROM (SELECT id, n FROM kinesis.${stream} ORDER BY landed, n)
     GROUP BY id) WHERE ns != arraySort(ns)`,
  );
  expect(disorder).toEqual([]);
  const status = await waitFor('the closed shards finished', async () => {
    const status = await statusOf(s, id);
    const finished = status.shards.filter((shard: { state: string }) => shard.state === 'finished');
    return finished.length === 3 ? status : undefined;
  });
  const byId = Object.fromEntries(status.shards.map((shard: { shardId: string }) => [shard.shardId, shard]));
  expect(byId[low]).toMatchObject({ parents: [first], state: 'reading' });
  expect(byId[merged]).toMatchObject({ parents: [high, second], state: 'reading' });
  expect(byId[first as string]).toMatchObject({ state: 'finished' });
}

/** LATEST: records put before the pipe runs are not read, those put after are, each once. */
export async function latestReadsOnlyNew(
  s: TestSluice,
  kinesis: StreamTools,
  stream: string,
  source: Record<string, unknown>,
): Promise<void> {
  await kinesis.createStream(stream, 2);
  await kinesis.put(stream, records(0, 100));
  const id = await createPipe(
    s,
    kinesisBody(stream, { streamName: stream, iteratorType: 'LATEST', ...source }),
  );
  await waitForState(s, id, 'Running');
  await kinesis.put(stream, records(100, 100));
  await waitForRows(s, stream, 100);
  // A later record, so that nothing of the first hundred was only late.
  await kinesis.put(stream, records(200, 1));
  await waitForRows(s, stream, 101);
  expect(await ids(s, stream)).toEqual(range(100, 101));
}
