import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, killWhileStreaming, serveEnv, sluiceServe } from './support/cli.js';
import { type RunningKinesis, startKinesis } from './support/kinesis.js';
import { kinesisBody } from './support/kinesis-pipes.js';
import { waitFor } from './support/wait.js';

const RECORDS = 30_000;
const ROUND = 500;
const KILLS = 4;
const STREAM = 'crash';

let kinesis: RunningKinesis;
const dirs: string[] = [];
/** The server running now: killed when the test ends, even when it fails. */
let running: Awaited<ReturnType<typeof sluiceServe>> | undefined;

beforeAll(async () => {
  kinesis = await startKinesis();
});

afterAll(async () => {
  running?.child.kill('SIGKILL');
  await kinesis?.stop();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('Kinesis ingestion survives crashes (a real server process, killed with SIGKILL)', () => {
  it('holds every record exactly once after kills mid-stream with a writer running', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-kinesis-crash-'));
    dirs.push(dataDir);
    await kinesis.createStream(STREAM, 4);
    // The server finds kinesalite the AWS SDK's own way.
    const env = serveEnv(dataDir, { SLUICE_ALLOW_PRIVATE_SOURCES: 'true', ...kinesis.environment() });
    const call = callApi;

    let server = await sluiceServe(env);
    running = server;
    const org = (await call(`${server.url}/v1/organizations`)).result[0].id;
    const service = (await call(`${server.url}/v1/organizations/${org}/services`)).result[0].id;
    const pipes = `/v1/organizations/${org}/services/${service}/pipes`;
    // Two replicas, small batches: kills land between claim, stage, move and commit of several.
    const created = await call(
      `${server.url}${pipes}`,
      'POST',
      kinesisBody('crash', { streamName: STREAM }, { replicas: 2 }),
    );
    expect(created.status, created.error).toBe(200);
    const pipeId = created.result.id;
    const statusOf = async () => (await call(`${server.url}${pipes}/${pipeId}/status`)).result;
    const query = async (sql: string) =>
      (await call(`${server.url}/v1/organizations/${org}/services/${service}/query`, 'POST', { sql })).result
        .rows;

    // The writer runs through the kills: 60 rounds of 500 records, 700 ms apart (about 45 s).
    const lastPut: Record<string, string> = {};
    const producing = (async () => {
      for (let round = 0; round < RECORDS / ROUND; round += 1) {
        const records = Array.from({ length: ROUND }, (_, i) => {
          const id = round * ROUND + i;
          return { key: `k${id % 97}`, data: JSON.stringify({ id, name: `n${id}` }) };
        });
        for (const put of await kinesis.put(STREAM, records)) lastPut[put.shardId] = put.sequenceNumber;
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
    const { killedAt } = killed;
    await producing;
    console.log(`killed at rows written: ${killedAt.join(', ')}`);
    const totals = await waitFor(
      'every record to land',
      async () => {
        const [row] = await query('SELECT count() AS n, uniqExact(id) AS ids FROM kinesis.crash');
        return Number(row.n) >= RECORDS ? row : undefined;
      },
      180_000,
      500,
    );
    // A little longer: a duplicate would land after the count reached the total.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const [final] = await query(
      'SELECT count() AS n, uniqExact(id) AS ids, min(id) AS lo, max(id) AS hi FROM kinesis.crash',
    );
    const status = await statusOf();
    server.child.kill('SIGTERM');
    await new Promise((resolve) => server.child.once('exit', resolve));
    expect(killedAt.filter((rows) => rows < RECORDS)).toHaveLength(KILLS);
    expect(totals).toEqual({ n: RECORDS, ids: RECORDS });
    expect(final).toEqual({ n: RECORDS, ids: RECORDS, lo: 0, hi: RECORDS - 1 });
    expect(status.rowsWritten).toBe(RECORDS);
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
});
