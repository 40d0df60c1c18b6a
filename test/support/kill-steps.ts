import { expect } from 'vitest';
import { stopChild } from './child.js';
import { callApi, type ServedSluice, serveEnv, sluiceServe } from './cli.js';
import { waitFor } from './wait.js';

/** The steps of a batch a server can be told to die at (SLUICE_TEST_KILL_AT, src/failpoints.ts). */
export const KILL_STEPS = ['claimed', 'staged', 'between-moves', 'moved'] as const;
/** Those steps, and `inserted`: a destination with views got its insert, its stage not emptied yet. */
export type KillStep = (typeof KILL_STEPS)[number] | 'inserted';

/** A server process of a test, the API paths of its organization's first service. */
export interface Served {
  server: ServedSluice;
  pipes: string;
  /** Calls the server's API with the bootstrap admin key. */
  call: (path: string, method?: string, body?: unknown) => Promise<any>;
  /** SQL through `POST .../query`: the rows. */
  query: (sql: string) => Promise<any[]>;
}

/** Starts `sluice serve` on `dataDir` (with `env` besides) and finds its service. */
export async function serve(dataDir: string, env: Record<string, string>): Promise<Served> {
  const server = await sluiceServe(serveEnv(dataDir, env));
  const call = (path: string, method = 'GET', body?: unknown) =>
    callApi(`${server.url}${path}`, method, body);
  const org = (await call('/v1/organizations')).result[0].id;
  const service = (await call(`/v1/organizations/${org}/services`)).result[0].id;
  const base = `/v1/organizations/${org}/services/${service}`;
  const query = async (sql: string) => {
    const answer = await call(`${base}/query`, 'POST', { sql });
    if (answer.status !== 200) throw new Error(`query failed: ${answer.error}`);
    return answer.result.rows as any[];
  };
  return { server, pipes: `${base}/pipes`, call, query };
}

/**
 * Starts a server told to kill itself (SIGKILL) when a batch of the pipe named `pipeName` reaches
 * `step`, runs `act` on it (create the pipe, give it something to read), and waits for it to die
 * there, saying where.
 */
export async function dieAt(options: {
  dataDir: string;
  env: Record<string, string>;
  step: KillStep;
  pipeName: string;
  act: (served: Served) => Promise<void>;
  /** Told of each server started (the test kills the last one when it ends, even when it fails). */
  started: (server: ServedSluice) => void;
}): Promise<void> {
  const { step, pipeName } = options;
  const served = await serve(options.dataDir, { ...options.env, SLUICE_TEST_KILL_AT: `${step}@${pipeName}` });
  options.started(served.server);
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    served.server.child.once('exit', (_code, signal) => resolve(signal)),
  );
  const killedThere = () =>
    served.server.output().includes(`killed at ${step} of batch`) &&
    served.server.output().includes(`of pipe ${pipeName}`);
  await options.act(served).catch(async (error) => {
    // The pipe may reach the step before `act` is done, on what an earlier server's `act` gave it
    // (PostgreSQL changes it had not read yet): the death asked for, which `act` failed only by.
    const ended = await Promise.race([
      exited,
      new Promise((resolve) => setTimeout(() => resolve('alive'), 10_000)),
    ]);
    if (ended === 'SIGKILL' && killedThere()) return;
    console.log(served.server.output().slice(-5_000));
    throw error;
  });
  const signal = await Promise.race([
    exited,
    new Promise<'alive'>((resolve) => setTimeout(() => resolve('alive'), 90_000)),
  ]);
  const said = served.server.output();
  if (signal !== 'SIGKILL') served.server.child.kill('SIGKILL');
  expect({ signal, pipe: pipeName }, said.slice(-5_000)).toEqual({ signal: 'SIGKILL', pipe: pipeName });
  expect(said).toContain(`killed at ${step} of batch`);
}

/**
 * One pipe per batch step, each made on a server told to die when that pipe's batch reaches the
 * step (dieAt), after `feed` gives it something to read. The next server starts with the next
 * pipe's failpoint (the earlier pipes resume under it, and may be killed at any point of theirs),
 * and a last one without any is returned, every pipe resuming on it.
 */
export async function killedAtEachStep(options: {
  dataDir: string;
  env: Record<string, string>;
  pipes: { step: KillStep; body: { name: string } }[];
  /** Gives the pipe just made what to read (a stream's next messages), if the source needs it. */
  feed?: (pipe: { step: KillStep; name: string }) => Promise<void>;
  started: (server: ServedSluice) => void;
}): Promise<{ served: Served; ids: Map<string, string> }> {
  const ids = new Map<string, string>();
  for (const { step, body } of options.pipes) {
    await dieAt({
      ...options,
      step,
      pipeName: body.name,
      act: async (served) => {
        const created = await served.call(served.pipes, 'POST', body);
        expect(created.status, created.error).toBe(200);
        ids.set(body.name, created.result.id);
        await options.feed?.({ step, name: body.name });
      },
    });
  }
  const served = await serve(options.dataDir, options.env);
  options.started(served.server);
  return { served, ids };
}

/** Waits until a pipe's status satisfies `done` (a failed pipe's reason is in the timeout's message). */
export async function statusUntil(
  served: Served,
  pipeId: string,
  done: (status: any) => boolean,
  timeoutMs = 120_000,
): Promise<any> {
  return waitFor(
    `pipe ${pipeId} to be done`,
    async () => {
      const status = (await served.call(`${served.pipes}/${pipeId}/status`)).result;
      if (status.state === 'Failed') throw new Error(`pipe failed: ${status.reason}`);
      return done(status) ? status : undefined;
    },
    timeoutMs,
    200,
  );
}

/** Stops a server as a user does (SIGTERM), and waits for it to exit. */
export async function stop(served: Served): Promise<void> {
  await stopChild(served.server.child);
}
