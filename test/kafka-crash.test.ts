import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, expectEveryRowOnce, killWhileStreaming, serveEnv, sluiceServe } from './support/cli.js';
import { type RunningKafka, startKafka } from './support/kafka.js';
import { kafkaPipe, produce } from './support/kafka-pipes.js';

const MESSAGES = 30_000;
const ROUND = 500;
const KILLS = 4;
const TOPIC = 'crash';

let kafka: RunningKafka;
const dirs: string[] = [];
/** The server running now: killed when the test ends, even when it fails. */
let running: Awaited<ReturnType<typeof sluiceServe>> | undefined;

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
    const call = callApi;

    let server = await sluiceServe(env);
    running = server;
    const org = (await call(`${server.url}/v1/organizations`)).result[0].id;
    const service = (await call(`${server.url}/v1/organizations/${org}/services`)).result[0].id;
    const pipes = `/v1/organizations/${org}/services/${service}/pipes`;
    const created = await call(`${server.url}${pipes}`, 'POST', {
      ...kafkaPipe('crash', { brokers: `plaintext://${kafka.bootstrap.plaintext}`, topics: TOPIC }),
      // Two members, small batches: kills land between claim, stage, move and commit of several.
      scaling: { replicas: 2 },
      settings: { streaming_max_insert_wait_ms: 500 },
    });
    expect(created.status, created.error).toBe(200);
    const pipeId = created.result.id;
    const statusOf = async () => (await call(`${server.url}${pipes}/${pipeId}/status`)).result;
    const query = async (sql: string) =>
      (await call(`${server.url}/v1/organizations/${org}/services/${service}/query`, 'POST', { sql })).result
        .rows;

    // The producer runs through the kills: 60 rounds of 500 messages, 700 ms apart (about 45 s).
    const producing = (async () => {
      for (let round = 0; round < MESSAGES / ROUND; round += 1) {
        const messages = Array.from({ length: ROUND }, (_, i) => {
          const id = round * ROUND + i;
          return { topic: TOPIC, key: `k${id % 97}`, value: JSON.stringify({ id, name: `n${id}` }) };
        });
        await produce(kafka.connection('plaintext'), messages);
        await new Promise((resolve) => setTimeout(resolve, 700));
      }
    })();

    const killed = await killWhileStreaming({
      server,
      env,
      kills: KILLS,
      rowsWritten: async (current) =>
        (await call(`${current.url}${pipes}/${pipeId}/status`)).result.rowsWritten,
      restarted: (next) => {
        running = next;
      },
    });
    server = killed.server;
    await producing;
    const status = await expectEveryRowOnce({
      server,
      table: 'kafka.crash',
      total: MESSAGES,
      killedAt: killed.killedAt,
      kills: KILLS,
      query,
      status: statusOf,
    });
    expect(status.partitions.map((p: { lag: number }) => p.lag)).toEqual([0, 0, 0, 0]);
  }, 400_000);
});
