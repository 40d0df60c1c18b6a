import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { stopChild } from './support/child.js';
import { callApi, serveEnv, sluiceServe } from './support/cli.js';
import { postgresPipeBody, type RunningPostgres, startPostgres } from './support/postgres.js';
import { BOOTSTRAP_KEY_ID, BOOTSTRAP_KEY_SECRET, basic } from './support/sluice.js';
import { startTcpTap } from './support/tcp-tap.js';
import { untilContains, waitFor } from './support/wait.js';

// A PostgreSQL pipe as a user runs it (`sluice serve`, a real server process, the runtime on)
// that loses its process (SIGKILL) mid-snapshot and mid-changes, and its source server mid-stream,
// while a writer keeps inserting, updating and deleting at the source: what the target shows
// (FINAL, without deleted rows) ends equal to the source, row by row, with no row twice.

const INITIAL_ROWS = 300_000;
const ROWS_PER_RANGE = 20_000;
/** Rows the writer inserts take ids from here up, far above the initial ones. */
const FIRST_NEW_ID = 1_000_001;

let postgres: RunningPostgres;
const dirs: string[] = [];
/** Every server process started: killed when the file ends, even after a failure. */
const servers: Server[] = [];
/** Writers still running when a test failed stop before the source does. */
const writers: { stop(): Promise<unknown> }[] = [];

beforeAll(async () => {
  postgres = await startPostgres();
}, 120_000);

afterAll(async () => {
  await Promise.all(writers.map((writer) => writer.stop().catch(() => {})));
  for (const server of servers) if (server.child.exitCode === null) server.child.kill('SIGKILL');
  await postgres?.stop();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

type Server = Awaited<ReturnType<typeof sluiceServe>>;

/** A `sluice serve` on `dataDir` and what the test asks of it through its HTTP API. */
async function serve(dataDir: string) {
  const server = await sluiceServe(
    serveEnv(dataDir, { SLUICE_ALLOW_PRIVATE_SOURCES: 'true', SLUICE_LOG_LEVEL: 'info' }),
  );
  servers.push(server);
  const org = (await callApi(`${server.url}/v1/organizations`)).result[0].id;
  const service = (await callApi(`${server.url}/v1/organizations/${org}/services`)).result[0].id;
  const base = `${server.url}/v1/organizations/${org}/services/${service}`;
  return {
    server,
    async create(body: unknown): Promise<string> {
      const created = await callApi(`${base}/pipes`, 'POST', body);
      if (created.status !== 200) throw new Error(`create failed (${created.status}): ${created.error}`);
      return created.result.id as string;
    },
    /** The answer to a create as it comes, refusals included. */
    tryCreate: (body: unknown) => callApi(`${base}/pipes`, 'POST', body),
    async pipeCount(): Promise<number> {
      return (await callApi(`${base}/pipes`)).result.length;
    },
    async status(pipeId: string) {
      const answer = await callApi(`${base}/pipes/${pipeId}/status`);
      if (answer.status !== 200) throw new Error(`status failed (${answer.status}): ${answer.error}`);
      return answer.result;
    },
    /** DELETE of a pipe: its HTTP status. */
    async remove(pipeId: string): Promise<number> {
      return (await callApi(`${base}/pipes/${pipeId}`, 'DELETE')).status;
    },
    async pipeStatusCode(pipeId: string): Promise<number> {
      return (await callApi(`${base}/pipes/${pipeId}`)).status;
    },
    /** A metric without labels, as /metrics gives it. */
    async metric(name: string): Promise<number> {
      const text = await (
        await fetch(`${server.url}/metrics`, {
          headers: { authorization: basic(BOOTSTRAP_KEY_ID, BOOTSTRAP_KEY_SECRET) },
        })
      ).text();
      const line = text.split('\n').find((l) => l.startsWith(`${name} `));
      if (!line) throw new Error(`no ${name} in /metrics`);
      return Number(line.split(' ')[1]);
    },
    async query(sql: string): Promise<Record<string, unknown>[]> {
      const answer = await callApi(`${base}/query`, 'POST', { sql });
      if (answer.status !== 200) throw new Error(`query failed (${answer.status}): ${answer.error}`);
      return answer.result.rows;
    },
    /** SIGKILL: no shutdown of any kind, as a crash or an OOM kill. */
    async kill() {
      const exited = new Promise((resolve) => server.child.once('exit', resolve));
      server.child.kill('SIGKILL');
      await exited;
    },
    async close() {
      await stopChild(server.child);
    },
  };
}
type Sluice = Awaited<ReturnType<typeof serve>>;

async function connectTo(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  // A server that stops (the restart test, the end of the file) breaks the connection.
  client.on('error', () => {});
  await client.connect();
  return client;
}

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = await connectTo(url);
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** A case of its own: progress recorded for a failure, a data directory, a database of items. */
async function newCase(name: string, rows: number) {
  recordProgress();
  const dataDir = await mkdtemp(join(tmpdir(), `sluice-pg-${name}-`));
  dirs.push(dataDir);
  return { dataDir, ...(await itemsDatabase(name, rows)) };
}

/** A database with `items` holding `rows` rows (ids 1..rows), analyzed so its ranges can be planned. */
async function itemsDatabase(name: string, rows: number): Promise<{ url: string; port: number }> {
  const url = await postgres.createDatabase(name);
  await withClient(url, async (client) => {
    await client.query('CREATE TABLE items (id int PRIMARY KEY, n int NOT NULL, note text NOT NULL)');
    await client.query(
      `INSERT INTO items SELECT i, i % 1000, md5(i::text) FROM generate_series(1, ${rows}) i`,
    );
    await client.query('ANALYZE items');
  });
  return { url, port: Number(new URL(url).port) };
}

/**
 * A steady stream of transactions at the source, one every ~30 ms: inserts, updates (of initial
 * and of inserted rows, some changing the key), deletes, upserts and now and then a larger update.
 * With `outages`, a broken connection is opened again (the source restarts under it).
 */
function startWriter(url: string, options: { outages?: boolean } = {}) {
  let stopping = false;
  let nextId = FIRST_NEW_ID;
  const done = { transactions: 0, failed: 0 };
  const randomId = () =>
    Math.random() < 0.5 || nextId === FIRST_NEW_ID
      ? 1 + Math.floor(Math.random() * INITIAL_ROWS)
      : FIRST_NEW_ID + Math.floor(Math.random() * (nextId - FIRST_NEW_ID));
  const randomIds = (count: number) => Array.from({ length: count }, randomId);
  const transaction = async (client: pg.Client, round: number) => {
    await client.query('BEGIN');
    const fresh = [nextId, nextId + 1, nextId + 2, nextId + 3];
    nextId += fresh.length;
    await client.query(
      `INSERT INTO items SELECT i, i % 1000, 'new ' || i FROM unnest($1::int[]) i`, //
      [fresh],
    );
    await client.query(`UPDATE items SET n = n + 1, note = 'upd ' || $2::int WHERE id = ANY($1::int[])`, [
      randomIds(4),
      round,
    ]);
    await client.query('DELETE FROM items WHERE id = ANY($1::int[])', [randomIds(2)]);
    if (round % 7 === 0) {
      // The key changes: the old one is deleted in the target, the new one appears.
      await client.query('UPDATE items SET id = $2 WHERE id = $1', [randomId(), nextId]);
      nextId += 1;
    }
    if (round % 11 === 0) {
      // Deleted and inserted again, or inserted over an existing row, in one transaction.
      const id = randomId();
      await client.query('DELETE FROM items WHERE id = $1', [id]);
      await client.query(
        `INSERT INTO items VALUES ($1, -1, 'again ' || $2::int) ON CONFLICT (id) DO UPDATE SET note = excluded.note`,
        [id, round],
      );
      await client.query(
        `INSERT INTO items VALUES ($1, -2, 'upsert ' || $2::int) ON CONFLICT (id) DO UPDATE SET n = items.n - 2, note = excluded.note`,
        [randomId(), round],
      );
    }
    if (round % 50 === 0) {
      const from = 1 + Math.floor(Math.random() * (INITIAL_ROWS - 500));
      await client.query(`UPDATE items SET n = n + 1000 WHERE id BETWEEN $1 AND $1 + 499`, [from]);
    }
    await client.query('COMMIT');
  };
  const running = (async () => {
    let client: pg.Client | undefined;
    for (let round = 1; !stopping; round += 1) {
      try {
        client ??= await connectTo(url);
        await transaction(client, round);
        done.transactions += 1;
      } catch (error) {
        if (!options.outages) throw error;
        done.failed += 1;
        await client?.end().catch(() => {});
        client = undefined;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    await client?.end();
  })();
  // What broke the writer is thrown by stop().
  running.catch(() => {});
  const writer = {
    done,
    /** Stops after the transaction in progress; throws what broke the writer. */
    async stop() {
      stopping = true;
      await running;
      return done;
    },
  };
  writers.push(writer);
  return writer;
}

interface Row {
  id: number;
  n: number;
  note: string;
}

/** Source and target rows by id range, compared; what differs, a few of each kind. */
async function differences(url: string, sluice: Sluice, database: string) {
  const missing: Row[] = [];
  const extra: Row[] = [];
  const changed: { source: Row; target: Row }[] = [];
  let sourceRows = 0;
  let targetRows = 0;
  const { max } = await withClient(url, async (client) => {
    const result = await client.query<{ max: number | null }>('SELECT max(id) AS max FROM items');
    return result.rows[0] ?? { max: 0 };
  });
  const [top] = await sluice.query(`SELECT max(id) AS max FROM mirror_${database}.items`);
  const last = Math.max(max ?? 0, Number(top?.max ?? 0));
  const span = 100_000;
  for (let from = 0; from <= last; from += span) {
    const source = await withClient(
      url,
      async (client) =>
        (
          await client.query<Row>('SELECT id, n, note FROM items WHERE id >= $1 AND id < $2 ORDER BY id', [
            from,
            from + span,
          ])
        ).rows,
    );
    const target = (await sluice.query(
      `SELECT id, n, note FROM mirror_${database}.items FINAL
        WHERE _pipe_is_deleted = 0 AND id >= ${from} AND id < ${from + span} ORDER BY id`,
    )) as unknown as Row[];
    sourceRows += source.length;
    targetRows += target.length;
    let i = 0;
    let j = 0;
    while (i < source.length || j < target.length) {
      const s = source[i];
      const t = target[j];
      if (s && (!t || s.id < t.id)) {
        missing.push(s);
        i += 1;
      } else if (t && (!s || t.id < s.id)) {
        extra.push(t);
        j += 1;
      } else if (s && t) {
        if (s.n !== t.n || s.note !== t.note) changed.push({ source: s, target: t });
        i += 1;
        j += 1;
      }
    }
  }
  return {
    sourceRows,
    targetRows,
    missing: missing.length,
    extra: extra.length,
    changed: changed.length,
    examples: { missing: missing.slice(0, 5), extra: extra.slice(0, 5), changed: changed.slice(0, 5) },
  };
}

/** Count and sums of the source and of the target (FINAL, not deleted): cheap to poll. */
async function totals(url: string, sluice: Sluice, database: string) {
  const source = await withClient(url, async (client) => {
    const result = await client.query(
      'SELECT count(*)::int AS rows, sum(id)::text AS ids, sum(n)::text AS ns, sum(length(note))::text AS notes FROM items',
    );
    return result.rows[0];
  });
  const [target] = await sluice.query(
    `SELECT count() AS rows, toString(sum(id)) AS ids, toString(sum(n)) AS ns, toString(sum(length(note))) AS notes
       FROM mirror_${database}.items FINAL WHERE _pipe_is_deleted = 0`,
  );
  return { source, target: { ...target, rows: Number(target?.rows) } };
}

/** Waits until the target's totals equal the source's (the writer has stopped). */
function converged(url: string, sluice: Sluice, database: string, timeoutMs = 240_000) {
  return waitFor(
    'the target to equal the source',
    async () => {
      const { source, target } = await totals(url, sluice, database);
      step(`totals ${JSON.stringify({ source, target })}`);
      return JSON.stringify(source) === JSON.stringify(target) ? source : undefined;
    },
    timeoutMs,
    1_000,
  );
}

/** The pipe's status once `check` holds; a Failed pipe ends the wait at once. */
let lastSeen = '';
function statusWhen(
  sluice: Sluice,
  pipeId: string,
  what: string,
  check: (status: any) => boolean,
  timeoutMs = 120_000,
  intervalMs = 50,
): Promise<any> {
  return waitFor(
    what,
    async () => {
      const status = await sluice.status(pipeId);
      const seen = JSON.stringify([
        status.state,
        status.reason,
        status.tables?.[0]?.snapshotRangesDone,
        status.replication?.lastCommittedLsn,
        status.lastError,
      ]);
      if (seen !== lastSeen) step(`${what}: ${seen}`);
      lastSeen = seen;
      if (status.state === 'Failed') throw new Error(`pipe failed: ${status.reason}`);
      return check(status) ? status : undefined;
    },
    timeoutMs,
    intervalMs,
  ).catch((error) => {
    console.log(sluice.server.output().slice(-20_000));
    throw error;
  });
}

/** The pipe's status once it is Degraded, within `ms`. */
function degradedWithin(sluice: Sluice, pipeId: string, ms: number): Promise<any> {
  return statusWhen(sluice, pipeId, 'the pipe to be Degraded', (status) => status.state === 'Degraded', ms);
}

/**
 * Waits until the server logged a failed run of the pipe's worker later than `since` (ms since the
 * epoch): a retry made after that moment did not get through either. The supervisor logs each
 * failed run before it marks the pipe Degraded and retries after a backoff
 * (src/pipes/runtime/supervisor.ts), so a line later than the moment the test saw Degraded is a
 * retry's.
 */
async function failedAgainAfter(sluice: Sluice, pipeId: string, since: number, timeoutMs = 150_000) {
  await waitFor(
    `a run of pipe ${pipeId} to fail after the pipe was seen Degraded`,
    async () =>
      sluice.server
        .output()
        .split('\n')
        .some(
          (line) =>
            line.includes('pipe worker failed; retrying') &&
            line.includes(pipeId) &&
            Number(/"time":(\d+)/.exec(line)?.[1]) > since,
        ) || undefined,
    timeoutMs,
    200,
  );
}

const streaming = (status: any) => status.state === 'Running' && status.replication?.phase === 'changes';

/** Batches of changes are being committed: the committed position moves on past `after`. */
async function committing(sluice: Sluice, pipeId: string, after?: string) {
  const first =
    after ?? (await statusWhen(sluice, pipeId, 'changes', streaming)).replication.lastCommittedLsn;
  return statusWhen(
    sluice,
    pipeId,
    `the committed position to move past ${first}`,
    (status) => streaming(status) && lsnValue(status.replication.lastCommittedLsn) > lsnValue(first),
    120_000,
    200,
  );
}

function lsnValue(lsn: string | null | undefined): bigint {
  if (!lsn) return 0n;
  const [high = '0', low = '0'] = lsn.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

/** What the test saw, in order, with seconds since it started: printed when it fails. */
/**
 * A pipe that reaches its server through a proxy that can drop every byte of some connections,
 * both ways, keeping them open: neither end sees a reset, as across a dropped route. With changes
 * flowing, the network goes silent; the pipe must be Degraded with `reason` in time, stay so while
 * silent, and be Running once the network is back, the target then equal to the source.
 */
async function silentNetwork(
  database: string,
  options: { silenced: (opening: Buffer) => boolean; degradedWithinMs: number; reason: RegExp },
) {
  const { dataDir, url, port } = await newCase(database, 20_000);
  const network = await startTcpTap(`tcp://127.0.0.1:${port}`);
  try {
    const sluice = await serve(dataDir);
    const pipeId = await sluice.create(postgresPipeBody(database, network.port, ['items']));
    await statusWhen(sluice, pipeId, 'the changes to stream', streaming, 180_000, 200);
    const writer = startWriter(url);
    await committing(sluice, pipeId);
    const beforeSilence = await sluice.status(pipeId);

    step('silence');
    const silencedAt = Date.now();
    network.silence(options.silenced);
    const degraded = await degradedWithin(sluice, pipeId, options.degradedWithinMs);
    const degradedSeenAt = Date.now();
    step(`degraded after ${degradedSeenAt - silencedAt} ms`);
    expect(degraded.reason).toMatch(options.reason);
    // The connection is taken as lost: the condition by its code, not by the words.
    expect(degraded.lastErrorCode).toBe('SLUICE_ERR_SOURCE_UNREACHABLE');
    // Still silent: new sessions hear nothing either (a retry made since failed), the pipe stays Degraded.
    await failedAgainAfter(sluice, pipeId, degradedSeenAt);
    step('a retry failed');
    expect((await sluice.status(pipeId)).state).toBe('Degraded');

    step('restore');
    network.restore();
    await statusWhen(sluice, pipeId, 'the pipe to be Running again', streaming, 180_000, 200);
    await committing(sluice, pipeId, beforeSilence.replication.lastCommittedLsn);
    await pause(2_000);
    const written = await writer.stop();
    expect(written.transactions).toBeGreaterThan(20);

    await converged(url, sluice, database).catch(async (error) => {
      console.log(await totals(url, sluice, database), sluice.server.output().slice(-20_000));
      throw error;
    });
    const diff = await differences(url, sluice, database);
    step(`diff ${JSON.stringify(diff)}`);
    expect(diff).toMatchObject({ missing: 0, extra: 0, changed: 0 });
    expect(diff.targetRows).toBe(diff.sourceRows);
    await sluice.close();
  } finally {
    await network.stop();
  }
}

const progress: string[] = [];
let started = Date.now();
function step(text: string) {
  progress.push(`${((Date.now() - started) / 1000).toFixed(1)}s ${text}`);
}
function recordProgress() {
  progress.length = 0;
  started = Date.now();
  onTestFailed(() => console.log(progress.join('\n')));
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function within<T>(ms: number, work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('PostgreSQL pipes survive crashes and a restarted source', () => {
  it('killed mid-snapshot and mid-changes with a writer running, the target ends equal to the source', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-pg-crash-'));
    dirs.push(dataDir);
    recordProgress();
    const { url, port } = await itemsDatabase('crash', INITIAL_ROWS);
    step('database');
    let sluice = await serve(dataDir);
    step('serving');
    const pipeId = await sluice.create(
      postgresPipeBody('crash', port, ['items'], {
        snapshotNumRowsPerPartition: ROWS_PER_RANGE,
        initialLoadParallelism: 2,
        pullBatchSize: 2_000,
      }),
    );
    const writer = startWriter(url);
    step('created, writer started');

    // Kill 1: some ranges committed, others in flight or not claimed yet.
    const atFirstKill = await statusWhen(
      sluice,
      pipeId,
      'two ranges of the snapshot to be done',
      (status) => status.state === 'Snapshot' && status.tables?.[0]?.snapshotRangesDone >= 2,
      240_000,
      20,
    );
    step('kill 1');
    await sluice.kill();
    step('killed 1');
    const ranges = atFirstKill.tables[0];
    expect(ranges.snapshotRanges).toBeGreaterThanOrEqual(INITIAL_ROWS / ROWS_PER_RANGE - 2);
    expect(ranges.snapshotRangesDone).toBeLessThan(ranges.snapshotRanges);
    expect(ranges.snapshot).toBe('copying');

    // The restarted server goes on with the snapshot where it was, not from the start.
    sluice = await serve(dataDir);
    const resumed = await statusWhen(sluice, pipeId, 'the snapshot to resume', (status) =>
      Boolean(status.tables?.[0]),
    );
    expect(resumed.state).toBe('Snapshot');
    expect(resumed.tables[0].snapshotRangesDone).toBeGreaterThanOrEqual(ranges.snapshotRangesDone);
    expect(resumed.tables[0].snapshotRangesDone).toBeLessThan(ranges.snapshotRanges);
    const afterSnapshot = await statusWhen(sluice, pipeId, 'the changes to stream', streaming, 300_000, 200);
    expect(afterSnapshot.tables[0]).toMatchObject({
      snapshot: 'done',
      snapshotRangesDone: ranges.snapshotRanges,
    });
    // The ranges done before the kill were not read again (at least two of them: 40,000 rows).
    expect(afterSnapshot.tables[0].snapshotRowsThisRun).toBeLessThan(INITIAL_ROWS);

    // Kill 2: batches of changes are being committed, the writer goes on.
    const beforeSecondKill = await committing(sluice, pipeId);
    await pause(300 + Math.floor(Math.random() * 1_200));
    const atSecondKill = await sluice.status(pipeId);
    step('kill 2');
    await sluice.kill();
    step('killed 2');
    expect(streaming(atSecondKill)).toBe(true);

    sluice = await serve(dataDir);
    await committing(sluice, pipeId, beforeSecondKill.replication.lastCommittedLsn);
    await pause(3_000);
    const written = await writer.stop();
    step(`writer stopped ${JSON.stringify(written)}`);
    expect(written.transactions).toBeGreaterThan(50);

    await converged(url, sluice, 'crash').catch(async (error) => {
      console.log(await totals(url, sluice, 'crash'), sluice.server.output().slice(-20_000));
      throw error;
    });
    step('converged');
    const diff = await differences(url, sluice, 'crash');
    step(`diff ${JSON.stringify(diff)}`);
    expect(diff).toMatchObject({ missing: 0, extra: 0, changed: 0 });
    expect(diff.targetRows).toBe(diff.sourceRows);
    const [counts] = await sluice.query(
      'SELECT count() AS total, uniqExact(id) AS ids FROM mirror_crash.items FINAL WHERE _pipe_is_deleted = 0',
    );
    expect({ total: Number(counts?.total), ids: Number(counts?.ids) }).toEqual({
      total: diff.sourceRows,
      ids: diff.sourceRows,
    });
    const final = await sluice.status(pipeId);
    expect(final.state).toBe('Running');
    console.log(
      `ranges: ${ranges.snapshotRanges}, killed after ${ranges.snapshotRangesDone} and in changes at ${atSecondKill.replication.lastCommittedLsn}; ${written.transactions} transactions, ${diff.sourceRows} rows`,
    );
    await sluice.close();
  }, 900_000);

  it('a transaction larger than a piece is committed in pieces; killed between them, the target ends equal, each row once', async () => {
    const { dataDir, url, port } = await newCase('large', 1_000);
    let sluice = await serve(dataDir);
    const pipeId = await sluice.create(
      postgresPipeBody('large', port, ['items'], { pullBatchSize: 50_000, syncIntervalSeconds: 1 }),
    );
    await statusWhen(sluice, pipeId, 'the changes to stream', streaming, 120_000, 200);
    step('streaming');
    // One transaction of 300,000 inserts and an update of the initial rows: six pieces or more.
    const large = 300_000;
    await withClient(url, async (client) => {
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO items SELECT i, i % 1000, 'large ' || i FROM generate_series(${FIRST_NEW_ID}, ${FIRST_NEW_ID + large - 1}) i`,
      );
      await client.query(`UPDATE items SET n = n + 1, note = 'updated' WHERE id <= 1000`);
      await client.query('COMMIT');
    });
    step('committed at the source');
    const partly = await waitFor(
      'part of the transaction in the target',
      async () => {
        const [row] = await sluice.query(
          `SELECT count() AS n FROM mirror_large.items WHERE id >= ${FIRST_NEW_ID}`,
        );
        const n = Number(row?.n);
        // Three pieces in: after the restart they come again, more than the stream holds ready
        // (twice pullBatchSize) before the batch in flight can be read again.
        return n >= 150_000 ? n : undefined;
      },
      120_000,
      20,
    );
    await sluice.kill();
    step(`killed with ${partly} of its rows in the target`);
    // Written in pieces: part of one transaction was there.
    expect(partly).toBeLessThan(large);

    sluice = await serve(dataDir);
    await converged(url, sluice, 'large');
    const diff = await differences(url, sluice, 'large');
    expect(diff).toMatchObject({ missing: 0, extra: 0, changed: 0 });
    // Each row once in the target, not merely once in FINAL: no piece was written twice.
    const [counts] = await sluice.query(
      `SELECT count() AS total, uniqExact(id) AS ids FROM mirror_large.items WHERE id >= ${FIRST_NEW_ID}`,
    );
    expect({ total: Number(counts?.total), ids: Number(counts?.ids) }).toEqual({ total: large, ids: large });
    const peak = readFileSync(`/proc/${sluice.server.child.pid}/status`, 'utf8').match(/VmHWM:\s+(\d+)/)?.[1];
    console.log(
      `a transaction of ${large + 1_000} changes; the restarted server's peak memory ${Math.round(Number(peak) / 1024)} MB`,
    );
    await sluice.close();
  }, 600_000);

  it('a source that goes silent without a reset (the network drops everything) makes the pipe Degraded within 45 s, then Running once it is back, without losing a change', async () => {
    await silentNetwork('silent', {
      silenced: () => true,
      degradedWithinMs: 45_000,
      reason:
        /^PostgreSQL: the replication stream stopped \(no word from the server in \d+ s, not even to a keepalive request: the connection is taken as lost\)$/,
    });
  }, 600_000);

  it('a metadata session that goes silent while the stream flows makes the pipe Degraded within 80 s, then Running once it is back', async () => {
    // Only the sessions that are not replication connections (their startup packet says so).
    await silentNetwork('silentmeta', {
      silenced: (opening) => !opening.includes('replication'),
      degradedWithinMs: 80_000,
      reason:
        /^PostgreSQL: the server did not answer the pipe's metadata session in 60 s; the connection is taken as lost$/,
    });
  }, 600_000);

  it('a snapshot COPY that goes silent mid-range makes the pipe Degraded within 100 s, then the snapshot ends once the network is back', async () => {
    const { dataDir, url, port } = await newCase('silentcopy', 20_000);
    const network = await startTcpTap(`tcp://127.0.0.1:${port}`);
    try {
      // The sessions that read ranges name themselves (application_name) in their startup
      // packet; each goes silent 64 KiB into what the server sends it, in the middle of a COPY.
      network.silence((opening) => opening.includes('sluice snapshot'), { afterBytes: 64 * 1024 });
      const sluice = await serve(dataDir);
      const pipeId = await sluice.create(postgresPipeBody('silentcopy', network.port, ['items']));
      const degraded = await degradedWithin(sluice, pipeId, 100_000);
      expect(degraded.reason).toMatch(
        /PostgreSQL sent nothing of the COPY in \d+ s: the connection is taken as lost/,
      );
      expect(degraded.lastErrorCode).toBe('SLUICE_ERR_SOURCE_UNREACHABLE');

      step('restore');
      network.restore();
      await statusWhen(sluice, pipeId, 'the changes to stream', streaming, 180_000, 200);
      const diff = await differences(url, sluice, 'silentcopy');
      expect(diff).toMatchObject({ missing: 0, extra: 0, changed: 0 });
      expect(diff.targetRows).toBe(20_000);
      await sluice.close();
    } finally {
      await network.stop();
    }
  }, 600_000);

  it('a table locked by another session mid-snapshot makes the pipe Degraded saying so, then the snapshot ends once the lock is gone', async () => {
    const { dataDir, url, port } = await newCase('locked', 60_000);
    const sluice = await serve(dataDir);
    const pipeId = await sluice.create(
      postgresPipeBody('locked', port, ['items'], {
        replicationMode: 'snapshot',
        snapshotNumRowsPerPartition: 1000,
        initialLoadParallelism: 1,
      }),
    );
    await statusWhen(
      sluice,
      pipeId,
      'the first range to be done',
      (status) => status.state === 'Snapshot' && status.tables?.[0]?.snapshotRangesDone >= 1,
      90_000,
      20,
    );
    const locker = await connectTo(url);
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE items IN ACCESS EXCLUSIVE MODE');
      // Locked with ranges still to read (status shows no tables while the pipe is Degraded).
      const locked = await sluice.status(pipeId);
      expect(locked.state).toBe('Snapshot');
      expect(locked.tables[0].snapshotRangesDone).toBeLessThan(locked.tables[0].snapshotRanges);
      const degraded = await degradedWithin(sluice, pipeId, 90_000);
      expect(degraded.reason).toMatch(
        /^PostgreSQL: "public"\."items" is locked by another session \(the snapshot's COPY waited 30 s for it\); the range is read again later$/,
      );
      expect(degraded.lastErrorCode).toBe('SLUICE_ERR_SOURCE_LOCKED');
      // No range's session is left waiting on the lock: the server gave up the COPY itself.
      const waiting = await withClient(url, (client) =>
        client.query(
          `SELECT 1 FROM pg_stat_activity WHERE application_name = 'sluice snapshot' AND wait_event_type = 'Lock'`,
        ),
      );
      expect(waiting.rows).toEqual([]);
      // A create meanwhile is refused (its checks read the table's size, which waits for the
      // lock) with a 400 that says why, and stores nothing.
      const pipes = await sluice.pipeCount();
      const refused = await sluice.tryCreate(
        postgresPipeBody(
          'locked',
          port,
          ['items'],
          { replicationMode: 'snapshot' },
          { destination: 'other' },
        ),
      );
      expect(refused.status).toBe(400);
      expect(refused.error).toContain('source.postgres.tableMappings');
      expect(refused.error).toContain(
        'a mapped table is locked by another session (the checks waited 10 s for it): create the pipe once it is free',
      );
      expect(await sluice.pipeCount()).toBe(pipes);
      await locker.query('COMMIT');
    } finally {
      await locker.end();
    }
    await statusWhen(
      sluice,
      pipeId,
      'the snapshot to end',
      (status) => status.state === 'Completed',
      180_000,
      200,
    );
    const [copied] = await sluice.query('SELECT count() AS n, uniqExact(id) AS ids FROM mirror_locked.items');
    expect({ n: Number(copied?.n), ids: Number(copied?.ids) }).toEqual({ n: 60_000, ids: 60_000 });
    await sluice.close();
  }, 600_000);

  it('a pipe deleted while its source cannot be reached gives back its slot and publication once the source answers, after a crash too', async () => {
    const { dataDir, url, port } = await newCase('gone', 1_000);
    const network = await startTcpTap(`tcp://127.0.0.1:${port}`);
    const held = () =>
      withClient(url, async (client) => ({
        slots: (
          await client.query('SELECT slot_name FROM pg_replication_slots WHERE database = current_database()')
        ).rowCount,
        publications: (
          await client.query("SELECT pubname FROM pg_publication WHERE pubname LIKE 'pipes\\_%'")
        ).rowCount,
      }));
    try {
      let sluice = await serve(dataDir);
      const pipeId = await sluice.create(postgresPipeBody('gone', network.port, ['items']));
      await statusWhen(sluice, pipeId, 'the changes to stream', streaming, 180_000, 200);
      expect(await held()).toEqual({ slots: 1, publications: 1 });

      step('silence, then delete');
      network.silence();
      expect(await sluice.remove(pipeId)).toBe(200);
      expect(await sluice.pipeStatusCode(pipeId)).toBe(404);
      // The source heard nothing: what the pipe made there is still there, and counted.
      expect(await held()).toEqual({ slots: 1, publications: 1 });
      expect(await sluice.metric('sluice_source_cleanups_pending')).toBe(1);
      await untilContains(
        sluice.server.output,
        "a deleted pipe's source still holds what the pipe made there",
      );

      step('crash, start again');
      await sluice.kill();
      sluice = await serve(dataDir);
      expect(await sluice.metric('sluice_source_cleanups_pending')).toBe(1);
      // The process started again tries again by itself, and the source still cannot be reached.
      await waitFor(
        'another attempt',
        async () =>
          sluice.server.output().includes("a deleted pipe's source still holds what the pipe made there") ||
          undefined,
        90_000,
        500,
      );
      expect(await held()).toEqual({ slots: 1, publications: 1 });

      step('restore');
      network.restore();
      await waitFor(
        'the slot and the publication to be dropped',
        async () => {
          const now = await held();
          return now.slots === 0 && now.publications === 0 ? now : undefined;
        },
        90_000,
        1_000,
      );
      expect(await sluice.metric('sluice_source_cleanups_pending')).toBe(0);
      await sluice.close();
    } finally {
      await network.stop();
    }
  }, 600_000);

  it('a source restarted mid-stream makes the pipe Degraded with the reason, then Running, without losing a change', async () => {
    const { dataDir, url, port } = await newCase('restart', 20_000);
    const sluice = await serve(dataDir);
    const pipeId = await sluice.create(
      postgresPipeBody('restart', port, ['items'], { pullBatchSize: 2_000 }),
    );
    await statusWhen(sluice, pipeId, 'the changes to stream', streaming, 180_000, 200);
    const writer = startWriter(url, { outages: true });
    await committing(sluice, pipeId);

    // Transactions committed at the source just before it stops wait in the slot.
    await pause(1_000);
    const beforeHalt = await sluice.status(pipeId);
    step('halt');
    // A fast shutdown ends the sessions; the walsender goes once the stream confirmed what it sent.
    const halting = Date.now();
    await within(60_000, postgres.halt(), 'PostgreSQL to shut down while the pipe streams');
    step(`halted in ${Date.now() - halting} ms`);
    const degraded = await degradedWithin(sluice, pipeId, 60_000);
    const degradedSeenAt = Date.now();
    // The reason names the source and what broke (a reset or terminated connection).
    expect(degraded.reason).toMatch(/^PostgreSQL: the replication stream stopped \(.+\)$/);
    // Down for a while: the retries fail too, the pipe stays Degraded.
    await failedAgainAfter(sluice, pipeId, degradedSeenAt);
    expect((await sluice.status(pipeId)).state).toBe('Degraded');
    step('start pg');
    await postgres.start();
    step('pg started');

    await statusWhen(sluice, pipeId, 'the pipe to be Running again', streaming, 180_000, 200);
    await committing(sluice, pipeId, beforeHalt.replication.lastCommittedLsn);
    await pause(3_000);
    const written = await writer.stop();
    expect(written.failed).toBeGreaterThan(0);
    expect(written.transactions).toBeGreaterThan(50);

    await converged(url, sluice, 'restart').catch(async (error) => {
      console.log(await totals(url, sluice, 'restart'), sluice.server.output().slice(-20_000));
      throw error;
    });
    step('converged');
    const diff = await differences(url, sluice, 'restart');
    step(`diff ${JSON.stringify(diff)}`);
    expect(diff).toMatchObject({ missing: 0, extra: 0, changed: 0 });
    expect(diff.targetRows).toBe(diff.sourceRows);
    const [counts] = await sluice.query(
      'SELECT count() AS total, uniqExact(id) AS ids FROM mirror_restart.items FINAL WHERE _pipe_is_deleted = 0',
    );
    expect({ total: Number(counts?.total), ids: Number(counts?.ids) }).toEqual({
      total: diff.sourceRows,
      ids: diff.sourceRows,
    });
    console.log(
      `degraded: ${degraded.reason}; ${written.transactions} transactions, ${written.failed} failed`,
    );
    await sluice.close();
  }, 600_000);
});
