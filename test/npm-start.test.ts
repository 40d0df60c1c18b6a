import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { environmentOf, hugePageMode, hugePagesMbOf } from './support/huge-pages.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));

/** Whether something accepts connections on the port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * `npm start` as a user (or a process manager) runs it: SIGTERM to the npm process stops Sluice,
 * closing its port and releasing the data directory's lock (the start script execs the server).
 */
describe('npm start', () => {
  const dirs: string[] = [];
  afterAll(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

  it('idles under 250 MB after a first start; SIGTERM to the npm start process stops the server: port closed, lock released', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-npm-start-'));
    dirs.push(dataDir);
    const npm = spawn('npm', ['start'], {
      cwd: REPO,
      env: {
        ...withoutTunables(process.env),
        SLUICE_DATA_DIR: dataDir,
        SLUICE_PORT: '0',
        SLUICE_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`npm start did not start:\n${output}`)), 120_000);
      const onData = (chunk: Buffer) => {
        output += chunk;
        const match = /http:\/\/127\.0\.0\.1:(\d+)\//.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      };
      npm.stdout.on('data', onData);
      npm.stderr.on('data', onData);
    });
    expect(await listening(port)).toBe(true);
    expect(existsSync(join(dataDir, 'sluice.lock'))).toBe(true);
    // The footprint of a first start at idle (engine processes apart): under 250 MB, where PGlite's
    // first start alone used to keep about 870 MB. `npm run bench -- memory` prints the figures.
    // Idle means settled: the lowest of 15 one-second samples (V8 shrinks its heap a few seconds
    // after start-up work ends, later on a loaded machine).
    const { pid } = JSON.parse(await readFile(join(dataDir, 'sluice.lock'), 'utf8')) as { pid: number };
    const samples: number[] = [];
    for (let i = 0; i < 15; i++) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      samples.push(Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) / 1024);
    }
    const rssMb = Math.min(...samples);
    console.log(
      `npm start on ${process.version}: the server idles at ${rssMb.toFixed(0)} MB after a first start (samples: ${samples.map((mb) => mb.toFixed(0)).join(' ')})`,
    );
    expect(rssMb).toBeGreaterThan(0);
    expect(rssMb).toBeLessThan(250);
    // The start script asks glibc's malloc for transparent huge pages (package.json): where the
    // kernel hands them out on request, the server's own allocations sit on them (about 2 MB
    // without, V8's and PGlite's memory being mapped apart from malloc).
    expect(environmentOf(pid)).toContain('GLIBC_TUNABLES=glibc.malloc.hugetlb=1');
    if (hugePageMode() === 'madvise') expect(hugePagesMbOf(pid)).toBeGreaterThan(8);
    const exited = new Promise((resolve) => npm.once('exit', resolve));
    npm.kill('SIGTERM');
    await exited;
    // The server closes its port and removes its lock on the way out.
    // Generous: on a loaded machine closing the engines and the store takes a while.
    const deadline = Date.now() + 60_000;
    while ((await listening(port)) || existsSync(join(dataDir, 'sluice.lock'))) {
      if (Date.now() > deadline) throw new Error(`Sluice still runs after npm start ended:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }, 150_000);
});

/** The environment without GLIBC_TUNABLES: the start script's own default is what is tested. */
function withoutTunables(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { GLIBC_TUNABLES: _, ...rest } = env;
  return rest;
}
