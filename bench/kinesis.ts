import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-kinesis';
import type { Sluice } from '../src/app.js';
import type { Engine } from '../src/engine/index.js';
import {
  KINESIS_CREDENTIALS,
  KINESIS_REGION,
  kinesisClient,
  type RunningKinesis,
  startKinesis,
} from '../test/support/kinesis.js';
import {
  benchSluice,
  cpuUsage,
  defaultScope,
  followBacklog,
  mbps,
  printTable,
  type Scope,
  timed,
  warmEngines,
} from './support.js';

/** Records in the backlog test. */
const RECORDS = Number(process.env.BENCH_KINESIS_RECORDS ?? 200_000);
const RECORD_BYTES = 1000;
const SHARDS = 4;
/** GetRecords' largest page. */
const PAGE = 10_000;
/** The pipes' flush: the smallest streaming_max_insert_wait_ms a pipe takes. */
const WAIT_MS = 500;
const STEADY = {
  perSecond: Number(process.env.BENCH_KINESIS_RATE ?? 2000),
  seconds: Number(process.env.BENCH_KINESIS_SECONDS ?? 20),
};

/**
 * Kinesis pipes against kinesalite in this process, beside a bare GetRecords loop (the SDK's
 * client, as Sluice makes it) reading the same stream in the same run: end-to-end records/s and
 * MB/s from a backlog to visible rows (one replica) and the ratio to the bare loop, then
 * put-to-visible latency at a steady rate into a table the bench made (each row's `landed`
 * against the `sent` its record carries), beside a bare consumer polling each shard five times
 * a second (Kinesis's limit, and Sluice's pace).
 */
export async function benchKinesis(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-bench-kinesis-'));
  const kinesis = await startKinesis();
  // Before Sluice makes its client: the SDK takes the endpoint from the environment.
  Object.assign(process.env, kinesis.environment());
  let sluice: Sluice | undefined;
  try {
    sluice = await benchSluice(dir);
    const scope = await defaultScope(sluice);
    const engine = await warmEngines(sluice, scope);
    await benchBacklog(sluice, scope, kinesis);
    await benchLatency(sluice, scope, engine, kinesis);
  } finally {
    await sluice?.close();
    await kinesis.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function benchBacklog(sluice: Sluice, scope: Scope, kinesis: RunningKinesis): Promise<void> {
  const stream = 'backlog';
  await kinesis.createStream(stream, SHARDS);
  const perShard = new Map<string, number>();
  const put = await timed(async () => {
    // In slices, so the bench never holds the whole backlog's records at once.
    const slice = 10_000;
    for (let from = 0; from < RECORDS; from += slice) {
      const count = Math.min(slice, RECORDS - from);
      const records = Array.from({ length: count }, (_, n) => ({
        key: `k${from + n}`,
        data: backlogRecord(from + n),
      }));
      for (const result of await kinesis.put(stream, records))
        perShard.set(result.shardId, (perShard.get(result.shardId) ?? 0) + 1);
    }
  });
  const bytes = RECORDS * RECORD_BYTES;
  const bare = await timed(() => bareRead(kinesis, stream, perShard));
  let peakRss = 0;
  const usage = cpuUsage();
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 100);
  const pipe = await followBacklog(
    sluice,
    scope,
    () => sluice.pipes.create(scope, backlogBody(stream)),
    RECORDS,
  );
  clearInterval(sampler);
  const cpu = usage();
  await sluice.pipes.command(scope, pipe.pipeId, { command: 'stop' });
  const bareRate = RECORDS / bare;
  const totalRate = RECORDS / pipe.totalSeconds;
  printTable(
    `Kinesis (kinesalite in this process): ${RECORDS} JSON records of ${RECORD_BYTES} bytes (${(bytes / 1e6).toFixed(0)} MB), ${SHARDS} shards, one replica, streaming_max_insert_wait_ms ${WAIT_MS}`,
    [
      {
        reader: 'PutRecords (500 a call, one call at a time)',
        'MB/s': mbps(bytes, put),
        'records/s': Math.round(RECORDS / put),
      },
      {
        reader: `bare GetRecords loop (${SHARDS} shards at once, Limit ${PAGE}, no pacing)`,
        'MB/s': mbps(bytes, bare),
        'records/s': Math.round(bareRate),
      },
      {
        reader: 'Sluice pipe, stream to visible rows (after the first batch)',
        'MB/s': ((pipe.steadyRowsPerSecond * RECORD_BYTES) / 1e6).toFixed(1),
        'records/s': Math.round(pipe.steadyRowsPerSecond),
        'ratio vs bare loop': (pipe.steadyRowsPerSecond / bareRate).toFixed(2),
      },
      {
        reader: 'Sluice pipe, create to every row visible',
        'MB/s': mbps(bytes, pipe.totalSeconds),
        'records/s': Math.round(totalRate),
        'ratio vs bare loop': (totalRate / bareRate).toFixed(2),
      },
    ],
  );
  const ratio = totalRate / bareRate;
  console.log(
    `Sluice / bare loop, create to every row visible: ${ratio.toFixed(2)} (goal >= 0.7: ${ratio >= 0.7 ? 'met' : 'NOT met'})`,
  );
  console.log(
    `while ingesting: the machine's ${cpus().length} cores ${pipe.steadyMachineBusy} busy at the steady rate (${cpu.machineBusy} from create to the last row); this process (Sluice and kinesalite) ${cpu.processCores} cores, its event loop ${cpu.eventLoop} busy (the engines are processes of their own)`,
  );
  console.log(
    `create (checks against the stream) ${pipe.createSeconds.toFixed(2)} s; first rows visible ${pipe.firstRowsSeconds.toFixed(2)} s after create; every row ${pipe.totalSeconds.toFixed(2)} s after create; peak RSS of this process ${Math.round(peakRss / 1e6)} MB`,
  );
  console.log(
    `where the first rows' time went: the create's checks ${pipe.createSeconds.toFixed(2)} s, then the run's start (shards, iterators, destinations) until Running ${pipe.runningAfterCreateSeconds.toFixed(2)} s, then the first batch (GetRecords, flush, stages, load, move, commit) ${(pipe.firstRowsAfterResponseSeconds - pipe.runningAfterCreateSeconds).toFixed(2)} s`,
  );
}

/** `{"id":…,"name":…,"payload":"xxx…"}` of RECORD_BYTES. */
function backlogRecord(id: number): string {
  const head = `{"id":${id},"name":"n${id}","payload":"`;
  return `${head}${'x'.repeat(RECORD_BYTES - head.length - 2)}"}`;
}

/** Reads every shard from TRIM_HORIZON at once, as fast as it goes, until each gave what was put in it. */
async function bareRead(kinesis: RunningKinesis, stream: string, perShard: Map<string, number>) {
  const client = kinesisClient(kinesis.endpoint);
  try {
    await Promise.all(
      [...perShard].map(async ([shard, expected]) => {
        let { ShardIterator: iterator } = await client.send(
          new GetShardIteratorCommand({
            StreamName: stream,
            ShardId: shard,
            ShardIteratorType: 'TRIM_HORIZON',
          }),
        );
        let seen = 0;
        while (iterator && seen < expected) {
          const answer = await client.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: PAGE }));
          seen += answer.Records?.length ?? 0;
          iterator = answer.NextShardIterator;
        }
        if (seen < expected) throw new Error(`bare loop read ${seen} of ${expected} records of ${shard}`);
      }),
    );
  } finally {
    client.destroy();
  }
}

function backlogBody(stream: string) {
  return {
    name: `bench kinesis ${stream}`,
    source: { kinesis: kinesisSource(stream, 'TRIM_HORIZON') },
    destination: {
      database: 'bench',
      table: `kinesis_${stream}`,
      tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
      columns: [
        { name: 'id', type: 'UInt64' },
        { name: 'name', type: 'String' },
        { name: 'payload', type: 'String' },
      ],
    },
    fieldMappings: mappings(['id', 'name', 'payload']),
    scaling: { replicas: 1 },
    settings: { streaming_max_insert_wait_ms: WAIT_MS },
  };
}

function kinesisSource(streamName: string, iteratorType: 'TRIM_HORIZON' | 'LATEST') {
  return {
    streamName,
    region: KINESIS_REGION,
    format: 'JSONEachRow',
    iteratorType,
    authentication: 'IAM_USER',
    accessKey: {
      accessKeyId: KINESIS_CREDENTIALS.accessKeyId,
      secretKey: KINESIS_CREDENTIALS.secretAccessKey,
    },
  };
}

function mappings(fields: string[]) {
  return fields.map((field) => ({ sourceField: field, destinationField: field }));
}

/**
 * Puts at a steady rate into a stream a LATEST pipe already reads, into a table the bench made
 * whose `landed` defaults to the insert's time; a bare consumer follows the same stream.
 */
async function benchLatency(sluice: Sluice, scope: Scope, engine: Engine, kinesis: RunningKinesis) {
  const stream = 'latency';
  const table = 'bench.kinesis_latency';
  await kinesis.createStream(stream, SHARDS);
  await engine.execute('CREATE DATABASE IF NOT EXISTS bench');
  await engine.execute(
    `CREATE TABLE ${table} (id UInt64, sent UInt64, landed DateTime64(3) DEFAULT now64(3)) ENGINE = MergeTree ORDER BY id`,
  );
  const pipe = await sluice.pipes.create(scope, {
    name: `bench kinesis ${stream}`,
    source: { kinesis: kinesisSource(stream, 'LATEST') },
    destination: {
      database: 'bench',
      table: 'kinesis_latency',
      managedTable: false,
      columns: [
        { name: 'id', type: 'UInt64' },
        { name: 'sent', type: 'UInt64' },
      ],
    },
    fieldMappings: mappings(['id', 'sent']),
    scaling: { replicas: 1 },
    settings: { streaming_max_insert_wait_ms: WAIT_MS },
  });
  await untilRunning(sluice, scope, pipe.id);

  const total = STEADY.perSecond * STEADY.seconds;
  const bare = await bareFollow(kinesis, stream, total);
  const start = Date.now();
  const tick = 100;
  for (let sent = 0; sent < total; ) {
    const due = Math.min(total, Math.round(((Date.now() - start + tick) / 1000) * STEADY.perSecond));
    if (due > sent) {
      const now = Date.now();
      await kinesis.put(
        stream,
        Array.from({ length: due - sent }, (_, i) => ({
          key: `k${sent + i}`,
          data: steadyRecord(sent + i, now),
        })),
      );
      sent = due;
    }
    await new Promise((resolve) => setTimeout(resolve, tick));
  }
  const putSeconds = (Date.now() - start) / 1000;
  const deadline = Date.now() + 120_000;
  for (;;) {
    const rows = Number((await engine.query(`SELECT count() AS n FROM ${table}`)).rows[0]?.n ?? 0);
    if (rows >= total) break;
    if (Date.now() > deadline) throw new Error(`only ${rows} of ${total} rows landed`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const bareLatencies = await bare.done;
  await sluice.pipes.command(scope, pipe.id, { command: 'stop' });
  const result = await engine.query(
    `SELECT count() AS rows, uniqExact(id) AS ids,
       quantileExact(0.5)(d) AS p50, quantileExact(0.99)(d) AS p99, max(d) AS max
     FROM (SELECT toInt64(toUnixTimestamp64Milli(landed)) - toInt64(sent) AS d, id FROM ${table})`,
  );
  const row = result.rows[0] ?? {};
  const bareAt = percentiles(bareLatencies);
  printTable(
    `Kinesis: put to visible rows at a steady ${STEADY.perSecond} records/s for ${STEADY.seconds} s (${total} records over ${SHARDS} shards; puts took ${putSeconds.toFixed(1)} s)`,
    [
      {
        reader: `Sluice pipe (LATEST, streaming_max_insert_wait_ms ${WAIT_MS}), put to row landed`,
        records: `${row.rows} (${row.ids} ids)`,
        'p50 ms': Number(row.p50),
        'p99 ms': Number(row.p99),
        'max ms': Number(row.max),
      },
      {
        reader: 'bare consumer (GetRecords every 200 ms a shard), put to record read',
        records: bareLatencies.length,
        'p50 ms': bareAt.p50,
        'p99 ms': bareAt.p99,
        'max ms': bareAt.max,
      },
    ],
  );
}

/** `{"id":…,"sent":…,"name":…,"payload":"xxx…"}` of RECORD_BYTES. */
function steadyRecord(id: number, sent: number): string {
  const head = `{"id":${id},"sent":${sent},"name":"n${id}","payload":"`;
  return `${head}${'x'.repeat(RECORD_BYTES - head.length - 2)}"}`;
}

async function untilRunning(sluice: Sluice, scope: Scope, pipeId: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const status = await sluice.pipes.status(scope, pipeId);
    if (status.state === 'Running') return;
    if (status.state === 'Failed') throw new Error(`bench pipe failed: ${status.reason}`);
    if (Date.now() > deadline) throw new Error(`bench pipe still ${status.state}: ${status.reason}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * A consumer of the stream's shards from their tips (LATEST, taken before it returns), each asked
 * every 200 ms, until `total` records came; each record's latency is its reading less its `sent`.
 */
async function bareFollow(kinesis: RunningKinesis, stream: string, total: number) {
  const client = kinesisClient(kinesis.endpoint);
  const shards = await kinesis.shards(stream);
  const iterators = await Promise.all(
    shards.map(async (shard) => {
      const answer = await client.send(
        new GetShardIteratorCommand({
          StreamName: stream,
          ShardId: shard.ShardId,
          ShardIteratorType: 'LATEST',
        }),
      );
      return answer.ShardIterator;
    }),
  );
  const latencies: number[] = [];
  const deadline = Date.now() + (STEADY.seconds + 120) * 1000;
  const follow = async (first: string | undefined) => {
    let iterator = first;
    while (iterator && latencies.length < total && Date.now() < deadline) {
      const called = Date.now();
      const answer = await client.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: PAGE }));
      const now = Date.now();
      for (const record of answer.Records ?? []) {
        const { sent } = JSON.parse(Buffer.from(record.Data ?? new Uint8Array()).toString('utf8')) as {
          sent: number;
        };
        latencies.push(now - sent);
      }
      iterator = answer.NextShardIterator;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, called + 200 - Date.now())));
    }
  };
  const done = Promise.all(iterators.map(follow))
    .then(() => latencies)
    .finally(() => client.destroy());
  // Awaited once the puts are done: a failure before then is not an unhandled rejection.
  done.catch(() => {});
  return { done };
}

function percentiles(values: number[]): { p50: number; p99: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { p50: at(0.5), p99: at(0.99), max: at(1) };
}
