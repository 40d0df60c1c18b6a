import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stopChild } from './support/child.js';
import { callApi, serveEnv, sluiceServe } from './support/cli.js';
import { waitFor } from './support/wait.js';

const FILES = 200;
const ROWS_PER_FILE = 50;
const KILLS = 4;

describe('crash safety of object-storage ingestion (a real server process, killed with SIGKILL)', () => {
  const dirs: string[] = [];
  afterAll(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

  it('holds every row exactly once after being killed at random points', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-crash-'));
    dirs.push(dataDir);
    await mkdir(join(dataDir, 'files/in'), { recursive: true });
    for (let f = 0; f < FILES; f += 1) {
      const lines = Array.from({ length: ROWS_PER_FILE }, (_, r) =>
        JSON.stringify({ id: f * ROWS_PER_FILE + r, file: f }),
      );
      await writeFile(
        join(dataDir, 'files/in', `${String(f).padStart(4, '0')}.ndjson`),
        `${lines.join('\n')}\n`,
      );
    }
    const env = serveEnv(dataDir);
    const call = callApi;

    let server = await sluiceServe(env);
    const org = (await call(`${server.url}/v1/organizations`)).result[0].id;
    const service = (await call(`${server.url}/v1/organizations/${org}/services`)).result[0].id;
    const pipes = `/v1/organizations/${org}/services/${service}/pipes`;
    const created = await call(`${server.url}${pipes}`, 'POST', {
      name: 'crash test',
      source: { objectStorage: { format: 'JSONEachRow', url: 'file:///in/*.ndjson' } },
      destination: {
        database: 'crash',
        table: 'rows',
        tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
        columns: [
          { name: 'id', type: 'UInt64' },
          { name: 'file', type: 'UInt32' },
        ],
      },
      // Three worker slots, each with batches of three files in flight: kills land mid-batch in several.
      scaling: { replicas: 3 },
      settings: { object_storage_max_file_count: 3, object_storage_concurrency: 2 },
    });
    expect(created.status, created.error).toBe(200);
    const pipeId = created.result.id;
    const statusOf = async () => (await call(`${server.url}${pipes}/${pipeId}/status`)).result;

    const killedAt: number[] = [];
    for (let kill = 0; kill < KILLS; kill += 1) {
      await waitFor(
        'the pipe to make progress',
        async () => (await statusOf()).state === 'Running' || undefined,
        60_000,
        20,
      );
      await new Promise((resolve) => setTimeout(resolve, 100 + Math.floor(Math.random() * 900)));
      killedAt.push((await statusOf()).filesDone);
      server.child.kill('SIGKILL');
      await new Promise((resolve) => server.child.once('exit', resolve));
      server = await sluiceServe(env);
    }
    console.log(`killed at files done: ${killedAt.join(', ')}`);
    const done = await waitFor(
      'the pipe to complete',
      async () => {
        const status = await statusOf();
        return status.state === 'Completed' ? status : undefined;
      },
      120_000,
    );
    const query = async (sql: string) =>
      (await call(`${server.url}/v1/organizations/${org}/services/${service}/query`, 'POST', { sql })).result
        .rows;
    const [totals] = await query(
      'SELECT count() AS n, uniqExact(id) AS ids, uniqExact(file) AS files FROM crash.rows',
    );
    await stopChild(server.child);
    // The kills fell while files remained (the pipe was Running before each), so recovery was tested.
    expect(killedAt.filter((files) => files < FILES)).toHaveLength(KILLS);
    expect({ kills: killedAt.length, totals }).toEqual({
      kills: KILLS,
      totals: { n: FILES * ROWS_PER_FILE, ids: FILES * ROWS_PER_FILE, files: FILES },
    });
    expect(done).toMatchObject({ filesDone: FILES, rowsWritten: FILES * ROWS_PER_FILE });
  }, 300_000);
});
