import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServedSluice } from './support/cli.js';
import { dieAt, KILL_STEPS, type KillStep, type Served, serve, stop } from './support/kill-steps.js';
import { openDatabase, postgresPipeBody, type RunningPostgres, startPostgres } from './support/postgres.js';
import { waitFor } from './support/wait.js';

// A table without a key (REPLICA IDENTITY FULL) holding identical rows is mirrored row for row:
// read as the README says (FINAL WHERE _pipe_is_deleted = 0), each pipe's target holds every row
// of the source as many times as the source does, through its snapshot and its changes (identical
// rows inserted, one of several deleted, one updated), in a real server process killed with
// SIGKILL at each step of a batch: of a snapshot range (its snapshot then starts over under a new
// snapshot, and the changes replayed from the slot skip what that one saw), and of a batch of
// changes.

const servers: ServedSluice[] = [];
let dataDir: string;
let postgres: RunningPostgres;
let client: pg.Client;
let port: number;
let served: Served;
const ids = new Map<string, string>();

/** Pipes on one source table, each into a database of its own, partitioned by `a`: several moves a batch. */
const body = (name: string) => {
  const pipe = postgresPipeBody(
    'twins',
    port,
    ['twins'],
    { snapshotNumRowsPerPartition: 1_000, initialLoadParallelism: 2, pullBatchSize: 500 },
    { name, destination: name.replace(/-/g, '_') },
  );
  const [mapping] = pipe.source.postgres.tableMappings;
  return {
    ...pipe,
    source: { postgres: { ...pipe.source.postgres, tableMappings: [{ ...mapping, partitionByExpr: 'a' }] } },
  };
};

/** Identical rows inserted, one of several deleted, one of several updated: each by its ctid. */
async function changeTwins(round: number): Promise<void> {
  await client.query(`INSERT INTO twins SELECT ${round % 3}, 'same' FROM generate_series(1, 40)`);
  await client.query(`DELETE FROM twins WHERE ctid IN (SELECT ctid FROM twins WHERE a = 1 LIMIT 3)`);
  await client.query(
    `UPDATE twins SET b = 'changed ${round}' WHERE ctid IN (SELECT ctid FROM twins WHERE a = 2 AND b = 'same' LIMIT 2)`,
  );
}

const sourceRows = async () =>
  (await client.query('SELECT a, b, count(*)::int AS n FROM twins GROUP BY a, b ORDER BY a, b')).rows;
const targetRows = (database: string) =>
  served.query(
    `SELECT a, b, toUInt32(count()) AS n FROM ${database}.twins FINAL WHERE _pipe_is_deleted = 0 GROUP BY a, b ORDER BY a, b`,
  );

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sluice-equal-pg-'));
  postgres = await startPostgres();
  ({ client, port } = await openDatabase(postgres, 'twins'));
  await client.query('CREATE TABLE twins (a int NOT NULL, b text NOT NULL)');
  await client.query('ALTER TABLE twins REPLICA IDENTITY FULL');
  // 6,000 rows, 2,000 of each value: identical rows in every snapshot range.
  await client.query(`INSERT INTO twins SELECT i % 3, 'same' FROM generate_series(1, 6000) i`);
  await client.query('ANALYZE twins');
  const env = { SLUICE_ALLOW_PRIVATE_SOURCES: 'true' };
  const started = (server: ServedSluice) => servers.push(server);
  let round = 0;

  // Killed in the snapshot: each pipe on its first range; the source changes while it is down.
  for (const step of KILL_STEPS) {
    const name = `snapshot-${step}`;
    await dieAt({
      dataDir,
      env,
      step,
      pipeName: name,
      started,
      act: async (at) => {
        const created = await at.call(at.pipes, 'POST', body(name));
        expect(created.status, created.error).toBe(200);
        ids.set(name, created.result.id);
      },
    });
    await changeTwins(round++);
  }

  // Killed in the changes: each pipe once its snapshot is done, on the first batch of changes.
  served = await serve(dataDir, env);
  started(served.server);
  for (const step of KILL_STEPS) {
    const created = await served.call(served.pipes, 'POST', body(`changes-${step}`));
    if (created.status !== 200) console.log(served.server.output().slice(-5_000));
    expect(created.status, created.error).toBe(200);
    ids.set(`changes-${step}`, created.result.id);
  }
  await everyPipeRunning();
  await stop(served);
  for (const step of KILL_STEPS) {
    await dieAt({
      dataDir,
      env,
      step,
      pipeName: `changes-${step}`,
      started,
      act: async (at) => {
        served = at;
        await everyPipeRunning();
        await changeTwins(round++);
      },
    });
  }
  served = await serve(dataDir, env);
  started(served.server);
  await changeTwins(round++);
}, 900_000);

async function everyPipeRunning(): Promise<void> {
  for (const id of ids.values()) {
    await waitFor(
      `pipe ${id} to be Running`,
      async () => (await served.call(`${served.pipes}/${id}/status`)).result.state === 'Running',
      180_000,
      200,
    );
  }
}

afterAll(async () => {
  if (served) await stop(served);
  for (const server of servers) if (server.child.exitCode === null) server.child.kill('SIGKILL');
  await client?.end();
  await postgres?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('a table without a key, identical rows included, mirrored row for row (PostgreSQL 18, a real server process)', () => {
  const cases: [string, KillStep][] = KILL_STEPS.flatMap((step) => [
    [`snapshot-${step}`, step],
    [`changes-${step}`, step],
  ]);

  it.each(cases)('%s: the target holds each row as many times as the source', async (name) => {
    const expected = await sourceRows();
    expect(expected.find((row) => row.a === 1)?.n).toBeGreaterThan(1_000);
    await waitFor(
      `${name} to hold what the source holds`,
      async () => JSON.stringify(await targetRows(name.replace(/-/g, '_'))) === JSON.stringify(expected),
      120_000,
      500,
    ).catch(async (error) => {
      console.log(name, await targetRows(name.replace(/-/g, '_')), expected);
      throw error;
    });
    const status = (await served.call(`${served.pipes}/${ids.get(name)}/status`)).result;
    expect(status).toMatchObject({ state: 'Running', badRecords: 0 });
  });

  it('identical rows are told apart by their id: the snapshot’s ctid, a change’s position', async () => {
    const [ids] = await served.query(
      `SELECT countIf(_pipe_row_id LIKE '(%,%)') > 0 AS from_snapshot, countIf(_pipe_row_id LIKE '%.%') > 0 AS from_changes,
              uniqExact(_pipe_row_id) = count() AS unique FROM changes_moved.twins FINAL WHERE _pipe_is_deleted = 0`,
    );
    expect(ids).toEqual({ from_snapshot: 1, from_changes: 1, unique: 1 });
  });
});
