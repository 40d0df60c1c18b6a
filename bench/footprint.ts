import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LOCK_FILE } from '../src/data-dir.js';
import { printTable } from './support.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const SETTLE_MS = 5_000;
const GOAL_MB = 250;

/**
 * The Sluice process at idle on the embedded defaults, started as a user starts it (`npm start`,
 * whose script execs the server; its pid is read from the data directory's lock), on its first
 * start and after a restart of the same data directory, beside a bare Node HTTP server measured
 * the same way. Engine processes are not counted: they are separate processes, one per service.
 */
export async function benchIdleFootprint(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-bench-idle-'));
  const dataDir = join(dir, 'data');
  try {
    const bare = await idleRss(
      spawn(process.execPath, [
        '-e',
        "const server = require('node:http').createServer((q, s) => s.end('ok')); server.listen(0, () => console.log('http://127.0.0.1:' + server.address().port))",
      ]),
    );
    const npmStart = () =>
      spawn('npm', ['start'], {
        cwd: REPO,
        env: {
          ...process.env,
          NODE_OPTIONS: '',
          SLUICE_DATA_DIR: dataDir,
          SLUICE_PORT: '0',
          SLUICE_LOG_LEVEL: 'warn',
        },
      });
    const first = await idleRss(npmStart(), dataDir);
    const restart = await idleRss(npmStart(), dataDir);
    const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);
    printTable(
      `Idle resident memory of the Sluice process on ${process.version}, ${SETTLE_MS / 1000} s after it listens (goal: under ${GOAL_MB} MB)`,
      [
        { process: 'Sluice, first start', 'RSS MB': mb(first), 'x bare Node': (first / bare).toFixed(1) },
        {
          process: 'Sluice, after a restart',
          'RSS MB': mb(restart),
          'x bare Node': (restart / bare).toFixed(1),
        },
        { process: 'bare Node HTTP server (baseline)', 'RSS MB': mb(bare), 'x bare Node': '1.0' },
      ],
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Waits until the process prints a URL, lets it settle, reads the RSS of the process that serves
 * (the one named in the data directory's lock, else the one started), then stops it.
 */
async function idleRss(child: ChildProcess, dataDir?: string): Promise<number> {
  try {
    await printedUrl(child);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const pid = dataDir
      ? (JSON.parse(await readFile(join(dataDir, LOCK_FILE), 'utf8')) as { pid: number }).pid
      : child.pid;
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    // npm exits as it passes the signal on: the server is gone when its lock is.
    while (dataDir && existsSync(join(dataDir, LOCK_FILE))) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

function printedUrl(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`no URL printed in 120 s:\n${output}`)), 120_000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      if (/https?:\/\/[^\s]+:\d+/.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited with ${code} before listening:\n${output}`)));
  });
}
