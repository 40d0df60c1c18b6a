import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ChildResult, type Listening, runToEnd, startListening } from './child.js';

/**
 * The `sluice` command as a user runs it after `npm ci`: bin/sluice.js on the compiled dist/, and
 * `npm start` or `npx sluice serve` from the repository.
 */
export const REPO = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(REPO, 'bin', 'sluice.js');

/** The first admin key and token the servers of these tests make (SLUICE_BOOTSTRAP_*). */
export const KEY_ID = 'sk_first_hour';
export const KEY_SECRET = 'first-hour-secret-0123456789';
export const TOKEN = 'slt_first-hour-token-0123456789';

/** A Sluice on `dataDir` with the known first credentials, quiet but for warnings. */
export function userEnv(dataDir: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SLUICE_DATA_DIR: dataDir,
    SLUICE_LOG_LEVEL: 'warn',
    SLUICE_LOG_FORMAT: 'json',
    SLUICE_RATE_LIMIT: '0',
    SLUICE_AUTH_FAILURES: '0',
    SLUICE_BOOTSTRAP_KEY_ID: KEY_ID,
    SLUICE_BOOTSTRAP_KEY_SECRET: KEY_SECRET,
    SLUICE_BOOTSTRAP_ACCESS_TOKEN: TOKEN,
    ...extra,
  };
}

/** What the admin key of `userEnv` gives the CLI. */
export const withKey = { SLUICE_KEY_ID: KEY_ID, SLUICE_KEY_SECRET: KEY_SECRET };

/** dist/ as `npm start` leaves it: compiled again only when src/ changed since the last build. */
export function buildOnce(): void {
  const built = spawnSync(process.execPath, [join(REPO, 'scripts', 'build-if-stale.mjs')], {
    cwd: REPO,
    encoding: 'utf8',
  });
  if (built.status !== 0) throw new Error(`the build failed:\n${built.stdout}${built.stderr}`);
}

export type BinResult = ChildResult;

/** Runs bin/sluice.js (through its shebang, as npx does) and collects what it prints. */
export function runBin(args: string[], env: Record<string, string>, input?: string): Promise<BinResult> {
  return runToEnd(BIN, args, { cwd: REPO, env, input });
}

export type Running = Listening;

/**
 * Starts what runs `sluice serve` (bin/sluice.js serve, npm start, npx sluice serve) in the
 * repository; resolves once it prints where it listens.
 */
export function startServer(command: string, args: string[], env: Record<string, string>): Promise<Running> {
  return startListening(command, args, { cwd: REPO, env, timeoutMs: 120_000 });
}

export function serveBin(args: string[], env: Record<string, string>): Promise<Running> {
  return startServer(BIN, ['serve', ...args], env);
}

export { stopChild as stop } from './child.js';

/** The pid of the server holding `dataDir`, from its lock file. */
export async function serverPid(dataDir: string): Promise<number> {
  return (JSON.parse(await readFile(join(dataDir, 'sluice.lock'), 'utf8')) as { pid: number }).pid;
}

/** Whether the process runs (a zombie nobody reaped yet has ended). */
export async function isRunning(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
}

/** Calls the API of a running server with the admin key of `userEnv`; the status and JSON back. */
export async function api(url: string, method = 'GET', body?: unknown, bearer?: string) {
  const response = await fetch(url, {
    method,
    headers: {
      authorization: bearer
        ? `Bearer ${bearer}`
        : `Basic ${Buffer.from(`${KEY_ID}:${KEY_SECRET}`).toString('base64')}`,
      'content-type': 'application/json',
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, json: (await response.json()) as any };
}
