import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { type ChildResult, type Listening, runToEnd, startListening } from './child.js';
import { BOOTSTRAP_KEY_ID, BOOTSTRAP_KEY_SECRET, basic } from './sluice.js';
import { waitFor } from './wait.js';

const ENTRY = fileURLToPath(new URL('./cli-entry.ts', import.meta.url));

export type CliResult = ChildResult;

/** Runs the `sluice` command from source (through tsx) and collects what it prints. */
export function sluiceCli(args: string[], env: Record<string, string>, input?: string): Promise<CliResult> {
  return runToEnd(process.execPath, ['--import', 'tsx', ENTRY, ...args], { env, input });
}

/** Starts `sluice serve` in a child process; resolves once it prints where it listens. */
export function sluiceServe(env: Record<string, string>): Promise<Listening> {
  return startListening(process.execPath, ['--import', 'tsx', ENTRY, 'serve'], { env, timeoutMs: 60_000 });
}

/** The environment of a `sluice serve` a test kills and restarts: any port, the bootstrap key. */
export function serveEnv(dataDir: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SLUICE_DATA_DIR: dataDir,
    SLUICE_PORT: '0',
    // SLUICE_TEST_SERVE_LOG_LEVEL=info shows a served node's log when a test of it fails.
    SLUICE_LOG_LEVEL: process.env.SLUICE_TEST_SERVE_LOG_LEVEL ?? 'warn',
    SLUICE_RATE_LIMIT: '0',
    SLUICE_AUTH_FAILURES: '0',
    SLUICE_BOOTSTRAP_KEY_ID: BOOTSTRAP_KEY_ID,
    SLUICE_BOOTSTRAP_KEY_SECRET: BOOTSTRAP_KEY_SECRET,
    ...extra,
  };
}

/** Calls the API of a server process with the bootstrap admin key; the JSON envelope back. */
export async function callApi(url: string, method = 'GET', body?: unknown) {
  const response = await fetch(url, {
    method,
    headers: {
      authorization: basic(BOOTSTRAP_KEY_ID, BOOTSTRAP_KEY_SECRET),
      'content-type': 'application/json',
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return (await response.json()) as { status: number; result: any; error?: string };
}

export type ServedSluice = Awaited<ReturnType<typeof sluiceServe>>;

/** SIGKILL (no shutdown of any kind, as a crash or an OOM kill), then `sluice serve` again. */
export async function killAndRestart(
  server: ServedSluice,
  env: Record<string, string>,
): Promise<ServedSluice> {
  const exited = new Promise((resolve) => server.child.once('exit', resolve));
  server.child.kill('SIGKILL');
  await exited;
  return sluiceServe(env);
}

/**
 * Kills a streaming pipe's server `kills` times while it ingests: each time once the pipe wrote
 * rows since the last kill (the restarted process reads again), after a random 0.5-2 s more, so
 * kills land between claim, stage, move and commit. Returns the server running at the end and the
 * rows written at each kill.
 */
async function killWhileStreaming(options: {
  server: ServedSluice;
  env: Record<string, string>;
  kills: number;
  rowsWritten: (server: ServedSluice) => Promise<number>;
  /** Told of each new server (the test kills the last one when it ends, even when it fails). */
  restarted: (server: ServedSluice) => void;
}): Promise<{ server: ServedSluice; killedAt: number[] }> {
  let { server } = options;
  const killedAt: number[] = [];
  for (let kill = 0; kill < options.kills; kill += 1) {
    const before = killedAt.at(-1) ?? 0;
    const current = server;
    await waitFor(
      'the pipe to make progress',
      async () => (await options.rowsWritten(current)) > before || undefined,
      90_000,
      20,
    ).catch((error) => {
      console.log(current.output());
      throw error;
    });
    await new Promise((resolve) => setTimeout(resolve, 500 + Math.floor(Math.random() * 1500)));
    killedAt.push(await options.rowsWritten(server));
    server = await killAndRestart(server, options.env);
    options.restarted(server);
  }
  return { server, killedAt };
}

/**
 * After the kills: waits until `total` rows are in `table` (ids 0 to total - 1) and the pipe has
 * committed all of it: its status counts `total` rows written and says it is at the end of its
 * source (`caughtUp`), so a duplicate would be in the table by then. Then stops the server, and
 * checks every row is there once and every kill came before the end. The pipe's last status is
 * returned for the test's own checks.
 */
async function expectEveryRowOnce(options: {
  server: ServedSluice;
  table: string;
  total: number;
  killedAt: number[];
  kills: number;
  query: (sql: string) => Promise<any[]>;
  status: () => Promise<any>;
  caughtUp: (status: any) => boolean;
}): Promise<any> {
  const { server, table, total, query } = options;
  console.log(`killed at rows written: ${options.killedAt.join(', ')}`);
  const totals = await waitFor(
    `every row in ${table}`,
    async () => {
      const [row] = await query(`SELECT count() AS n, uniqExact(id) AS ids FROM ${table}`);
      return Number(row.n) >= total ? row : undefined;
    },
    180_000,
    500,
  );
  const status = await waitFor(
    `the pipe to commit all of ${table}`,
    async () => {
      const current = await options.status();
      return current.rowsWritten >= total && options.caughtUp(current) ? current : undefined;
    },
    180_000,
    500,
  );
  const [final] = await query(
    `SELECT count() AS n, uniqExact(id) AS ids, min(id) AS lo, max(id) AS hi FROM ${table}`,
  );
  // The pipe's history (README, "Pipe history") holds each committed batch once, through the
  // kills: its rows add up to what the table holds, read per batch and per minute alike.
  const pipe = `'${String(status.id)}'`;
  const [history] = await query(
    `SELECT sum(rows) AS rows, count() AS batches, uniqExact(batch) AS distinct FROM _sluice_history.pipe_events WHERE pipe_id = ${pipe} AND kind = 'batch'`,
  );
  const [minutes] = await query(
    `SELECT sum(rows) AS rows FROM _sluice_history.pipe_minutes WHERE pipe_id = ${pipe}`,
  );
  server.child.kill('SIGTERM');
  await new Promise((resolve) => server.child.once('exit', resolve));
  expect(Number(history.rows)).toBe(total);
  expect(Number(history.batches)).toBe(Number(history.distinct));
  expect(Number(minutes.rows)).toBe(total);
  expect(options.killedAt.filter((rows) => rows < total)).toHaveLength(options.kills);
  expect(totals).toEqual({ n: total, ids: total });
  expect(final).toEqual({ n: total, ids: total, lo: 0, hi: total - 1 });
  expect(status.rowsWritten).toBe(total);
  return status;
}

/**
 * The crash test of a streaming source: `sluice serve` with `env`, the pipe `body` created through
 * its API, and a writer running through `kills` SIGKILLs (killWhileStreaming) in rounds of ids
 * (round r writes r * size to r * size + size - 1), `pauseMs` apart, its last `kills` rounds one
 * after each kill; then every id is in `table` once (expectEveryRowOnce). Returns the pipe's last
 * status for the test's own checks.
 */
export async function survivesKillsWhileWriting(options: {
  env: Record<string, string>;
  body: unknown;
  table: string;
  kills: number;
  writer: { rounds: number; size: number; pauseMs: number; write: (ids: number[]) => Promise<void> };
  /** The pipe's status says it is at the end of what the writer wrote (no lag, the last record committed). */
  caughtUp: (status: any) => boolean;
  /** Told of each server started (the test kills the last one when it ends, even when it fails). */
  started: (server: ServedSluice) => void;
}): Promise<any> {
  const { env, writer } = options;
  let server = await sluiceServe(env);
  options.started(server);
  const org = (await callApi(`${server.url}/v1/organizations`)).result[0].id;
  const service = (await callApi(`${server.url}/v1/organizations/${org}/services`)).result[0].id;
  const pipes = `/v1/organizations/${org}/services/${service}/pipes`;
  const created = await callApi(`${server.url}${pipes}`, 'POST', options.body);
  expect(created.status, created.error).toBe(200);
  const pipeId = created.result.id;
  const statusAt = async (at: ServedSluice) => (await callApi(`${at.url}${pipes}/${pipeId}/status`)).result;

  // The last `kills` rounds wait, one for each kill: on a slow machine the kills outlast the
  // writer's pace, and a kill after every row is in would not be a kill mid-stream. One round
  // comes after each kill, so the next kill always has rows to see the pipe make progress on.
  const kills = Array.from({ length: options.kills }, () => {
    let resolve = () => {};
    const promise = new Promise<void>((done) => {
      resolve = done;
    });
    return { promise, resolve };
  });
  const held = writer.rounds - options.kills;
  const writing = (async () => {
    for (let round = 0; round < writer.rounds; round += 1) {
      if (round >= held) await kills[round - held]?.promise;
      await writer.write(Array.from({ length: writer.size }, (_, i) => round * writer.size + i));
      await new Promise((resolve) => setTimeout(resolve, writer.pauseMs));
    }
  })();
  let done = 0;
  const killed = await killWhileStreaming({
    server,
    env,
    kills: options.kills,
    rowsWritten: async (current) => (await statusAt(current)).rowsWritten,
    restarted: (restarted) => {
      options.started(restarted);
      kills[done++]?.resolve();
    },
  }).finally(() => {
    for (const kill of kills) kill.resolve();
  });
  server = killed.server;
  await writing;
  const last = server;
  return expectEveryRowOnce({
    server,
    table: options.table,
    total: writer.rounds * writer.size,
    killedAt: killed.killedAt,
    kills: options.kills,
    query: async (sql) =>
      (await callApi(`${last.url}/v1/organizations/${org}/services/${service}/query`, 'POST', { sql })).result
        .rows,
    status: () => statusAt(last),
    caughtUp: options.caughtUp,
  });
}
