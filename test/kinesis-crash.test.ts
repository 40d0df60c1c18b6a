import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServedSluice, serveEnv, survivesKillsWhileWriting } from './support/cli.js';
import { type RunningKinesis, startKinesis } from './support/kinesis.js';
import { startKinesisLocal } from './support/kinesis-local.js';
import { kinesisBody } from './support/kinesis-pipes.js';

const ROUND = 500;
const STREAM = 'crash';

const dirs: string[] = [];
/** The server running now: killed when the test ends, even when it fails. */
let running: ServedSluice | undefined;

afterAll(async () => {
  running?.child.kill('SIGKILL');
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** Reading with GetRecords (kinesalite), and with SubscribeToShard (kinesis-local). */
const READS = [
  {
    how: 'GetRecords, kinesalite',
    start: () => startKinesis(),
    source: {},
    records: 30_000,
    kills: 4,
    pauseMs: 700,
  },
  // kinesis-local takes a second or so per PutRecords of 500, and keeps a killed node's
  // subscriptions until Sluice takes its consumer back (15 s): fewer records, slower, two kills.
  {
    how: 'enhanced fan-out, kinesis-local',
    start: startKinesisLocal,
    source: { useEnhancedFanOut: true },
    records: 10_000,
    kills: 2,
    pauseMs: 2_500,
  },
];

describe.each(READS)(
  'Kinesis ingestion survives crashes ($how; a real server process, killed with SIGKILL)',
  ({ start, source, records: RECORDS, kills: KILLS, pauseMs }) => {
    let kinesis: RunningKinesis;

    beforeAll(async () => {
      kinesis = await start();
    }, 60_000);

    afterAll(async () => {
      await kinesis?.stop();
    });

    it('holds every record exactly once after kills mid-stream with a writer running', async () => {
      const dataDir = await mkdtemp(join(tmpdir(), 'sluice-kinesis-crash-'));
      dirs.push(dataDir);
      await kinesis.createStream(STREAM, 4);
      // The server finds the Kinesis server the AWS SDK's own way.
      const env = serveEnv(dataDir, { SLUICE_ALLOW_PRIVATE_SOURCES: 'true', ...kinesis.environment() });
      const lastPut: Record<string, string> = {};
      const status = await survivesKillsWhileWriting({
        env,
        // Two replicas, small batches: kills land between claim, stage, move and commit of several.
        body: kinesisBody('crash', { streamName: STREAM, ...source }, { replicas: 2 }),
        table: 'kinesis.crash',
        kills: KILLS,
        // The writer runs through the kills: rounds of 500 records (60, 700 ms apart, about 45 s, on kinesalite).
        writer: {
          rounds: RECORDS / ROUND,
          size: ROUND,
          pauseMs,
          write: async (ids) => {
            const records = ids.map((id) => ({
              key: `k${id % 97}`,
              data: JSON.stringify({ id, name: `n${id}` }),
            }));
            for (const put of await kinesis.put(STREAM, records)) lastPut[put.shardId] = put.sequenceNumber;
          },
        },
        caughtUp: (status) =>
          Object.entries(lastPut).every(([shard, last]) =>
            status.shards?.some(
              (s: { shardId: string; lastCommittedSequenceNumber: string | null }) =>
                s.shardId === shard && s.lastCommittedSequenceNumber === last,
            ),
          ),
        started: (server) => {
          running = server;
        },
      });
      // Every shard committed to its last record, the shards spread over both replicas.
      expect(
        Object.fromEntries(
          status.shards.map((shard: { shardId: string; lastCommittedSequenceNumber: string }) => [
            shard.shardId,
            shard.lastCommittedSequenceNumber,
          ]),
        ),
      ).toEqual(lastPut);
      expect(status.shards.map((shard: { replica: number }) => shard.replica).sort()).toEqual([0, 0, 1, 1]);
    }, 400_000);
  },
);
