import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LOCK_FILE } from '../src/data-dir.js';
import { printTable } from './support.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const SETTLE_MS = 5_000;
const GOAL_MB = 250;
/** The whole idle footprint with one service: Sluice, the service's engine and its source reader. */
const WHOLE_GOAL_MB = 400;
const READY_GOAL_S = 3;
/** Engines stop this long after their last statement, for the figure after they stopped. */
const ENGINE_IDLE_SECONDS = 10;

interface Started {
  child: ChildProcess;
  output: string;
  url: string;
  /** From the spawn to the first answer of /health. */
  readySeconds: number;
}

/**
 * The Sluice process at idle on the embedded defaults, started as a user starts it (`npm start`,
 * whose script execs the server; its pid is read from the data directory's lock), on its first
 * start and after a restart of the same data directory, beside a bare Node HTTP server measured
 * the same way: how long until it answers `/health`, and its resident memory. Then the whole
 * footprint with one service, Sluice and every process under it: at idle, once the service's
 * engine and source reader have run a statement, and after they stopped for being idle.
 */
export async function benchIdleFootprint(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-bench-idle-'));
  const dataDir = join(dir, 'data');
  const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);
  try {
    const bare = await measured(
      spawn(process.execPath, [
        '-e',
        "const server = require('node:http').createServer((q, s) => s.end('ok')); server.listen(0, () => console.log('http://127.0.0.1:' + server.address().port))",
      ]),
    );
    const npmStart = () => startedByNpm(dataDir, { SLUICE_ENGINE_IDLE_SECONDS: String(ENGINE_IDLE_SECONDS) });
    const first = await measured(npmStart(), dataDir);
    const restart = await measured(npmStart(), dataDir);
    const row = (name: string, m: { rss: number; readySeconds: number }) => ({
      process: name,
      'ready s': m.readySeconds.toFixed(2),
      'x bare Node (ready)': (m.readySeconds / bare.readySeconds).toFixed(1),
      'RSS MB': mb(m.rss),
      'x bare Node (RSS)': (m.rss / bare.rss).toFixed(1),
    });
    printTable(
      `The Sluice process on ${process.version}: from \`npm start\` to /health answering (goal: under ${READY_GOAL_S} s on a restart), and resident memory ${SETTLE_MS / 1000} s after (goal: under ${GOAL_MB} MB)`,
      [
        row('Sluice, first start', first),
        row('Sluice, after a restart', restart),
        row('bare Node HTTP server (baseline)', bare),
      ],
    );
    const whole = await wholeFootprint(npmStart(), dataDir, adminKey(first.output));
    printTable(
      `The whole footprint with one service: Sluice and every process under it (goal at idle: under ${WHOLE_GOAL_MB} MB)`,
      whole.map(({ moment, processes, rss, pss }) => ({
        moment,
        processes,
        'PSS MB (shared pages once)': mb(pss),
        'RSS MB (summed)': mb(rss),
        'x bare Node (PSS)': (pss / bare.rss).toFixed(1),
      })),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Sluice as a user starts it, `npm start`, on `dataDir` at a free port, logging warnings only. */
export function startedByNpm(dataDir: string, env: Record<string, string> = {}): ChildProcess {
  return spawn('npm', ['start'], {
    cwd: REPO,
    env: {
      ...process.env,
      NODE_OPTIONS: '',
      SLUICE_DATA_DIR: dataDir,
      SLUICE_PORT: '0',
      SLUICE_LOG_LEVEL: 'warn',
      ...env,
    },
  });
}

/** A started process's time to ready and its resident memory once settled; then it is stopped. */
async function measured(child: ChildProcess, dataDir?: string) {
  const started = await start(child);
  try {
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const pid = dataDir ? await serverPid(dataDir) : (child.pid as number);
    return { rss: await rssOf(pid), readySeconds: started.readySeconds, output: started.output };
  } finally {
    await stop(child, dataDir);
  }
}

/**
 * The process tree of a Sluice on the first service at three moments: idle after its start; once
 * a query ran on the service's engine and a schema discovery on its source reader; and after
 * both stopped for being idle (SLUICE_ENGINE_IDLE_SECONDS).
 */
async function wholeFootprint(child: ChildProcess, dataDir: string, key: string | undefined) {
  const started = await start(child);
  try {
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const pid = await serverPid(dataDir);
    const moments = [{ moment: 'idle after the start', ...(await treeRss(pid)) }];
    const service = /Pipes live at (\S+)\/pipes/.exec(started.output)?.[1];
    if (!key || !service) throw new Error(`no key or service in the banner:\n${started.output}`);
    const auth = `Basic ${Buffer.from(key).toString('base64')}`;
    const post = async (path: string, body: unknown) => {
      const response = await fetch(`${service}${path}`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    };
    await post('/query', { sql: 'SELECT 1' });
    const files =
      /Local files for file:\/\/ pipes: (\S+)/.exec(started.output)?.[1] ?? join(dataDir, 'files');
    await mkdir(files, { recursive: true });
    await writeFile(join(files, 'footprint.ndjson'), '{"id": 1, "name": "a"}\n');
    await post('/pipes/schemaDiscovery', {
      source: { objectStorage: { format: 'JSONEachRow', url: 'file:///footprint.ndjson' } },
    });
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    moments.push({ moment: 'engine and source reader used', ...(await treeRss(pid)) });
    await new Promise((resolve) => setTimeout(resolve, (ENGINE_IDLE_SECONDS + 10) * 1000));
    moments.push({ moment: `engines idle ${ENGINE_IDLE_SECONDS} s: stopped`, ...(await treeRss(pid)) });
    return moments;
  } finally {
    await stop(child, dataDir);
  }
}

/** `id:secret` of the admin key a first start prints. */
export function adminKey(output: string): string | undefined {
  const printed = /-u '([^':]+):([^']+)'/.exec(output);
  return printed ? `${printed[1]}:${printed[2]}` : undefined;
}

export async function start(child: ChildProcess): Promise<Started> {
  const began = performance.now();
  const { url, output } = await printedUrl(child);
  for (;;) {
    const ok = await fetch(`${url}/health`).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const readySeconds = (performance.now() - began) / 1000;
  return { child, output, url: url.replace(/\/$/, ''), readySeconds };
}

export async function stop(child: ChildProcess, dataDir?: string): Promise<void> {
  // A child that already ended (it failed to start) emits no 'exit' again: waiting for one would
  // leave nothing in the event loop, and the bench would end with code 13 and no word of why.
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  // npm exits as it passes the signal on: the server is gone when its lock is.
  while (dataDir && existsSync(join(dataDir, LOCK_FILE))) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function serverPid(dataDir: string): Promise<number> {
  return (JSON.parse(await readFile(join(dataDir, LOCK_FILE), 'utf8')) as { pid: number }).pid;
}

async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}

/** The resident memory of a process and every process under it (the engines, in their sandboxes). */
export async function treeRss(
  root: number,
): Promise<{ processes: number; rss: number; pss: number; pids: number[] }> {
  const parents = new Map<number, number>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // pid (comm) state ppid ...: the name may hold spaces and parentheses, so read after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid) parents.set(Number(entry), ppid);
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) {
    for (const [pid, ppid] of parents) if (ppid === tree[i]) tree.push(pid);
  }
  const sizes = await Promise.all(tree.map(rssOf));
  const shares = await Promise.all(tree.map(pssOf));
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  return { processes: tree.length, rss: sum(sizes), pss: sum(shares), pids: tree };
}

/**
 * A process's proportional share of memory: pages it shares with others (the engine library both
 * engine processes map) counted once across them, so a sum over processes is what they really hold.
 */
async function pssOf(pid: number): Promise<number> {
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
  return Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0) * 1024;
}

function printedUrl(child: ChildProcess): Promise<{ url: string; output: string }> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`no URL printed in 120 s:\n${output}`)), 120_000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      const url = /https?:\/\/[^\s]+:\d+/.exec(output)?.[0];
      // The banner comes in one write: wait for its last line when there is one.
      if (
        url &&
        (!output.includes('Sluice is listening') || /Local files|Try:[^\n]*\n[^\n]+\n/.test(output))
      ) {
        clearTimeout(timer);
        resolve({ url, output });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening:\n${output}`));
    });
  });
}
