import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { stopChild } from './support/child.js';
import { sluiceServe } from './support/cli.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));

/** The shell blocks that follow a heading or sentence of the README, in order. */
function blocksAfter(readme: string, marker: string, count: number): string[] {
  const from = readme.indexOf(marker);
  if (from < 0) throw new Error(`the README has no "${marker}"`);
  const blocks = [...readme.slice(from).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] as string);
  return blocks.slice(0, count);
}

function hasCommand(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * jq is what the README uses to pick ids out of responses. Where the machine has none, a stand-in
 * that understands the README's filters (`.a.b`, `.a[0].b`, -r) is put on the PATH: the one part
 * of this test that is not the real tool.
 */
async function jqOnPath(dir: string): Promise<string> {
  if (hasCommand('jq')) return process.env.PATH ?? '';
  const script = `#!/usr/bin/env node
const filter = process.argv.slice(2).filter((a) => a !== '-r')[0];
let text = '';
process.stdin.on('data', (c) => (text += c)).on('end', () => {
  let value = JSON.parse(text);
  for (const [, key, index] of filter.matchAll(/\\.(\\w+)|\\[(\\d+)\\]/g)) value = value?.[key ?? Number(index)];
  console.log(typeof value === 'string' ? value : JSON.stringify(value));
});
`;
  await writeFile(join(dir, 'jq'), script);
  await chmod(join(dir, 'jq'), 0o755);
  return `${dir}:${process.env.PATH ?? ''}`;
}

/**
 * The README's first pipe and alerts walkthrough, pasted as written into bash against a server
 * started as the README starts it (a fresh data directory, SLUICE_ALLOW_PRIVATE_WEBHOOKS and a 5 s
 * tick), with the README's own receiver: the alert fires and then resolves, in real time.
 * Placeholders are filled with what the server printed; paths point at the test's data directory.
 */
describe('the README, pasted', () => {
  const children: ChildProcess[] = [];
  let dir = '';
  afterAll(async () => {
    await Promise.all(children.map(stopChild));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('ingests the first pipe, and the alert walkthrough fires and resolves within a few minutes (jq: the system one, or a stand-in where none is installed)', async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-readme-'));
    const dataDir = join(dir, 'data');
    const readme = await readFile(join(REPO, 'README.md'), 'utf8');
    const [firstPipe] = blocksAfter(readme, '### Your first pipe', 1);
    const [start, alerts] = blocksAfter(readme, 'A walkthrough that fires and resolves', 2);
    const [receiverLine, startLine] = (start as string).trim().split('\n');
    expect(startLine).toBe('SLUICE_ALLOW_PRIVATE_WEBHOOKS=true SLUICE_ALERT_TICK_SECONDS=5 npm start');

    const receiver = spawn('bash', ['-c', (receiverLine as string).replace(/ &$/, '')], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(receiver);
    let received = '';
    receiver.stdout?.on('data', (chunk) => (received += chunk));

    const server = await sluiceServe({
      SLUICE_DATA_DIR: dataDir,
      SLUICE_PORT: '0',
      SLUICE_LOG_LEVEL: 'warn',
      SLUICE_ALLOW_PRIVATE_WEBHOOKS: 'true',
      SLUICE_ALERT_TICK_SECONDS: '5',
    });
    children.push(server.child);
    const printed = (label: string) => new RegExp(`${label}:\\s+(\\S+)`).exec(server.output())?.[1] as string;
    const [keyId, keySecret, token] = [
      printed('API key id'),
      printed('API key secret'),
      printed('access token'),
    ];
    const script = `set -e\n${firstPipe}\n${alerts}`
      .replaceAll('http://127.0.0.1:8080', server.url)
      .replaceAll('<key id>', keyId)
      .replaceAll('<key secret>', keySecret)
      .replaceAll('<access token>', token)
      .replaceAll('data/files', join(dataDir, 'files'));
    const run = spawn('bash', ['-c', script], {
      cwd: REPO,
      env: { ...process.env, SLUICE_DATA_DIR: dataDir, PATH: await jqOnPath(dir) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    run.stdout?.on('data', (chunk) => (output += chunk));
    run.stderr?.on('data', (chunk) => (output += chunk));
    const code = await new Promise((resolve) => run.once('exit', resolve));
    expect(code, output).toBe(0);
    // The first pipe's query: Lyon, 2 readings, 12 on average.
    expect(output).toMatch(/Lyon\s+2\s+12/);
    expect(output).toContain('"name":"too hot"');

    const deadline = Date.now() + 240_000;
    while (!/"state": "OK"/.test(received.slice(received.indexOf('"state": "ALERT"')))) {
      if (Date.now() > deadline)
        throw new Error(`the receiver got:\n${received}\nthe script printed:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    expect(received).toContain('{"text": "too hot is firing", "state": "ALERT"}');
    expect(received.indexOf('"state": "ALERT"')).toBeLessThan(received.lastIndexOf('"state": "OK"'));
  }, 330_000);
});
