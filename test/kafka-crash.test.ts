import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServedSluice, serveEnv, survivesKillsWhileWriting } from './support/cli.js';
import { type RunningKafka, startKafka } from './support/kafka.js';
import { kafkaPipe, produce } from './support/kafka-pipes.js';

const MESSAGES = 30_000;
const ROUND = 500;
const KILLS = 4;
const TOPIC = 'crash';

let kafka: RunningKafka;
const dirs: string[] = [];
/** The server running now: killed when the test ends, even when it fails. */
let running: ServedSluice | undefined;

beforeAll(async () => {
  kafka = await startKafka();
}, 600_000);

afterAll(async () => {
  running?.child.kill('SIGKILL');
  await kafka?.stop();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('Kafka ingestion survives crashes (a real server process, killed with SIGKILL)', () => {
  it('holds every message exactly once after kills mid-stream with a producer running', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-kafka-crash-'));
    dirs.push(dataDir);
    await kafka.createTopic(TOPIC, 4);
    const env = serveEnv(dataDir, {
      SLUICE_ALLOW_PRIVATE_SOURCES: 'true',
      SLUICE_ALLOW_PLAINTEXT_KAFKA: 'true',
    });
    const status = await survivesKillsWhileWriting({
      env,
      body: {
        ...kafkaPipe('crash', { brokers: `plaintext://${kafka.bootstrap.plaintext}`, topics: TOPIC }),
        // Two members, small batches: kills land between claim, stage, move and commit of several.
        scaling: { replicas: 2 },
        settings: { streaming_max_insert_wait_ms: 500 },
      },
      table: 'kafka.crash',
      kills: KILLS,
      // The producer runs through the kills: 60 rounds of 500 messages, 700 ms apart (about 45 s).
      writer: {
        rounds: MESSAGES / ROUND,
        size: ROUND,
        pauseMs: 700,
        write: (ids) =>
          produce(
            kafka.connection('plaintext'),
            ids.map((id) => ({
              topic: TOPIC,
              key: `k${id % 97}`,
              value: JSON.stringify({ id, name: `n${id}` }),
            })),
          ),
      },
      caughtUp: (status) =>
        status.partitions?.length === 4 && status.partitions.every((p: { lag: number }) => p.lag === 0),
      started: (server) => {
        running = server;
      },
    });
    expect(status.partitions.map((p: { lag: number }) => p.lag)).toEqual([0, 0, 0, 0]);
  }, 400_000);
});
