import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServedSluice } from './support/cli.js';
import { type RunningKafka, startKafka } from './support/kafka.js';
import { produce } from './support/kafka-pipes.js';
import { KILL_STEPS, killedAtEachStep, type Served, statusUntil, stop } from './support/kill-steps.js';
import { type RunningKinesis, startKinesis } from './support/kinesis.js';
import { kinesisBody } from './support/kinesis-pipes.js';

// Every record lands, even when two are alike: the same message produced 10,000 times (Kafka,
// three partitions) and the same record put 6,000 times (Kinesis, two shards) land 10,000 and
// 6,000 times, through a real server process (`sluice serve`, runtime on), also in pipes killed
// with SIGKILL at each step of a batch (src/failpoints.ts). The stream's partition or shard is a
// column the table is partitioned by, so a batch moves several partitions.

const ROUNDS = 5;
const servers: ServedSluice[] = [];
const dirs: string[] = [];

afterAll(async () => {
  for (const server of servers) if (server.child.exitCode === null) server.child.kill('SIGKILL');
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A managed MergeTree partitioned by the stream's partition or shard column. */
function destination(database: string, table: string, part: { name: string; type: string }) {
  return {
    database,
    table,
    tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: [part.name], partitionBy: part.name },
    columns: [{ name: 'v', type: 'String' }, part],
  };
}

/**
 * The kill-at-each-step pipes and one never killed, all reading one stream from its start; `write`
 * puts round r of the equal records (one round as each killed pipe is made, the rest after).
 * Resolves once every pipe wrote them all, with each pipe's rows by partition or shard.
 */
async function everyPipeReads(options: {
  env: Record<string, string>;
  body: (name: string) => { name: string };
  write: (round: number) => Promise<void>;
  total: number;
  /** The pipe's status says it is at the end of what was written (no lag, the last record committed). */
  caughtUp: (status: any) => boolean;
}) {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-equal-streams-'));
  dirs.push(dataDir);
  let round = 0;
  const killed = await killedAtEachStep({
    dataDir,
    env: options.env,
    pipes: KILL_STEPS.map((step) => ({ step, body: options.body(`killed-${step}`) })),
    feed: () => options.write(round++),
    started: (server) => servers.push(server),
  });
  const { served, ids } = killed;
  const never = await served.call(served.pipes, 'POST', options.body('never-killed'));
  expect(never.status, never.error).toBe(200);
  ids.set('never-killed', never.result.id);
  while (round < ROUNDS) await options.write(round++);
  for (const [name, id] of ids) {
    // Every row committed and the pipe at the end of its source: a row doubled would be in the table now.
    const settled = (s: any) => s.rowsWritten >= options.total && options.caughtUp(s);
    await statusUntil(served, id, settled, 180_000).catch(async (error) => {
      console.log(name, (await served.call(`${served.pipes}/${id}/status`)).result);
      throw error;
    });
  }
  return { served, ids };
}

async function landedBy(served: Served, table: string, part: string) {
  return served.query(
    `SELECT toString(${part}) AS part, v, toUInt32(count()) AS n FROM ${table} GROUP BY part, v ORDER BY part`,
  );
}

const countsBy = (parts: string[]) => {
  const counts = new Map<string, number>();
  for (const part of parts) counts.set(part, (counts.get(part) ?? 0) + 1);
  return [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([part, n]) => ({ part, v: 'same', n }));
};

describe('Kafka: the same message 10,000 times lands 10,000 times (a real broker, a real server process)', () => {
  const PER_ROUND = 2_000;
  let kafka: RunningKafka;
  let result: { served: Served; ids: Map<string, string> };
  const partitions: string[] = [];

  beforeAll(async () => {
    kafka = await startKafka();
    await kafka.createTopic('equal', 3);
    result = await everyPipeReads({
      env: { SLUICE_ALLOW_PRIVATE_SOURCES: 'true', SLUICE_ALLOW_PLAINTEXT_KAFKA: 'true' },
      body: (name) => ({
        name,
        source: {
          kafka: {
            format: 'JSONEachRow',
            brokers: `plaintext://${kafka.bootstrap.plaintext}`,
            topics: 'equal',
          },
        },
        destination: destination('kafka', name.replace(/-/g, '_'), { name: 'p', type: 'Int32' }),
        fieldMappings: [
          { sourceField: 'v', destinationField: 'v' },
          { sourceField: '_partition', destinationField: 'p' },
        ],
        settings: { streaming_max_insert_wait_ms: 500 },
      }),
      write: async () => {
        const messages = Array.from({ length: PER_ROUND }, (_, i) => ({
          topic: 'equal',
          partition: i % 3,
          value: '{"v": "same"}',
        }));
        await produce(kafka.connection('plaintext'), messages);
        partitions.push(...messages.map((m) => String(m.partition)));
      },
      total: ROUNDS * PER_ROUND,
      caughtUp: (status) =>
        status.partitions?.length === 3 && status.partitions.every((p: { lag: number }) => p.lag === 0),
    });
  }, 900_000);

  afterAll(async () => {
    if (result) await stop(result.served);
    await kafka?.stop();
  });

  it.each(['never-killed', ...KILL_STEPS.map((step) => `killed-${step}`)])(
    '%s: every message once, by partition',
    async (name) => {
      const { served, ids } = result;
      expect(partitions).toHaveLength(ROUNDS * PER_ROUND);
      expect(await landedBy(served, `kafka.${name.replace(/-/g, '_')}`, 'p')).toEqual(countsBy(partitions));
      const status = (await served.call(`${served.pipes}/${ids.get(name)}/status`)).result;
      expect(status).toMatchObject({ rowsWritten: ROUNDS * PER_ROUND, badRecords: 0 });
      expect(status.partitions.map((p: { lag: number }) => p.lag)).toEqual([0, 0, 0]);
    },
  );
});

describe('Kinesis: the same record 6,000 times lands 6,000 times (kinesalite, a real server process)', () => {
  const PER_ROUND = 1_200;
  let kinesis: RunningKinesis;
  let result: { served: Served; ids: Map<string, string> };
  const shards: string[] = [];
  /** Per shard, the sequence number of the last record put. */
  const lastPut: Record<string, string> = {};

  beforeAll(async () => {
    kinesis = await startKinesis();
    await kinesis.createStream('equal', 2);
    result = await everyPipeReads({
      env: { SLUICE_ALLOW_PRIVATE_SOURCES: 'true', ...kinesis.environment() },
      body: (name) => ({
        name,
        source: kinesisBody(name, { streamName: 'equal' }).source,
        destination: destination('kinesis', name.replace(/-/g, '_'), { name: 's', type: 'String' }),
        fieldMappings: [
          { sourceField: 'v', destinationField: 'v' },
          { sourceField: '_shard_id', destinationField: 's' },
        ],
        settings: { streaming_max_insert_wait_ms: 500 },
      }),
      write: async (round) => {
        const records = Array.from({ length: PER_ROUND }, (_, i) => ({
          key: `k${round}-${i}`,
          data: '{"v": "same"}',
        }));
        for (const put of await kinesis.put('equal', records)) {
          shards.push(put.shardId);
          lastPut[put.shardId] = put.sequenceNumber;
        }
      },
      total: ROUNDS * PER_ROUND,
      caughtUp: (status) =>
        Object.entries(lastPut).every(([shard, last]) =>
          status.shards?.some(
            (s: { shardId: string; lastCommittedSequenceNumber: string | null }) =>
              s.shardId === shard && s.lastCommittedSequenceNumber === last,
          ),
        ),
    });
  }, 900_000);

  afterAll(async () => {
    if (result) await stop(result.served);
    await kinesis?.stop();
  });

  it.each(['never-killed', ...KILL_STEPS.map((step) => `killed-${step}`)])(
    '%s: every record once, by shard',
    async (name) => {
      const { served, ids } = result;
      expect(new Set(shards).size).toBe(2);
      expect(await landedBy(served, `kinesis.${name.replace(/-/g, '_')}`, 's')).toEqual(countsBy(shards));
      const status = (await served.call(`${served.pipes}/${ids.get(name)}/status`)).result;
      expect(status).toMatchObject({ rowsWritten: ROUNDS * PER_ROUND, badRecords: 0 });
    },
  );
});
