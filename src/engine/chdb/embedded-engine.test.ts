import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { access, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../engine.js';
import { EmbeddedEngine } from './embedded-engine.js';

describe('EmbeddedEngine (chDB in a child process)', () => {
  let dir: string;
  let engine: EmbeddedEngine;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-engine-'));
    engine = new EmbeddedEngine(join(dir, 'engine'), { confined: false });
  });
  afterAll(async () => {
    await engine.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers with columns and rows, and engine errors with their code', async () => {
    expect(await engine.query('SELECT 1 AS one, toString(2) AS two')).toEqual({
      columns: [
        { name: 'one', type: 'UInt8' },
        { name: 'two', type: 'String' },
      ],
      rows: [{ one: 1, two: '2' }],
    });
    await expect(engine.query('SELECT * FROM nowhere.nothing')).rejects.toMatchObject({ code: 81 });
  });

  it('a result after a query that failed mid-output is still only its own (chDB leaves residue)', async () => {
    const path = join(dir, 'early-bad.ndjson');
    await writeFile(path, '{"id": 1}\n{"id": 2}\n{"id": "three"}\n');
    await expect(
      engine.query(`SELECT id FROM file('${path}', 'JSONEachRow', 'id UInt64')`),
    ).rejects.toBeInstanceOf(EngineError);
    expect(await engine.query('SELECT 42 AS answer')).toEqual({
      columns: [{ name: 'answer', type: 'UInt8' }],
      rows: [{ answer: 42 }],
    });
  });

  it('enforces read-only and time limits in the engine', async () => {
    await expect(engine.query('CREATE DATABASE x', { readonly: true })).rejects.toMatchObject({ code: 164 });
    await expect(
      engine.query('SELECT count() FROM numbers_mt(1e12) WHERE sipHash64(number) = 1', { timeoutMs: 1000 }),
    ).rejects.toMatchObject({ code: 159 });
  });

  it("runs with none of Sluice's environment (no master key, database URL or cloud keys, nor Sluice's NODE_OPTIONS)", async () => {
    process.env.SLUICE_MASTER_KEY_FOR_TEST = 'must-not-reach-the-engine';
    // An operator's preload (an APM agent) is Sluice's own: in the engine it would run beside the
    // engine, or, in a sandbox that cannot see it, stop the engine from starting.
    const preloaded = join(dir, 'preloaded');
    const preload = join(dir, 'preload.cjs');
    await writeFile(
      preload,
      `require('node:fs').writeFileSync(${JSON.stringify(preloaded)}, String(process.pid));\n`,
    );
    const nodeOptions = process.env.NODE_OPTIONS;
    process.env.NODE_OPTIONS = `${nodeOptions ?? ''} --require ${preload}`.trim();
    const isolated = new EmbeddedEngine(join(dir, 'isolated'), { confined: false });
    try {
      const result = await isolated.query("SELECT * FROM file('/proc/self/environ', 'RawBLOB')");
      const environment = String(result.rows[0]?.raw_blob ?? '');
      expect(environment).toContain('PATH=');
      expect(environment).not.toContain('must-not-reach-the-engine');
      expect(environment).not.toContain('preload.cjs');
      await expect(access(preloaded)).rejects.toThrow(/ENOENT/);
    } finally {
      delete process.env.SLUICE_MASTER_KEY_FOR_TEST;
      if (nodeOptions === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = nodeOptions;
      await isolated.close();
    }
  });

  it('keeps the limits of a statement that ends in a comment', async () => {
    await expect(engine.query('CREATE DATABASE sneaky --', { readonly: true })).rejects.toMatchObject({
      code: 164,
    });
  });

  it('starts its process on warm, before any statement (a run warms its source reader)', async () => {
    const warmed = new EmbeddedEngine(join(dir, 'warmed'), { confined: false });
    try {
      expect(warmed.processId()).toBeUndefined();
      await warmed.warm();
      const pid = warmed.processId();
      expect(pid).toBeDefined();
      expect(process.kill(pid as number, 0)).toBe(true);
      // The statement after it runs in the same process, not a new one.
      await warmed.query('SELECT 1');
      expect(warmed.processId()).toBe(pid);
    } finally {
      await warmed.close();
    }
  });

  it('starts a new engine process after a crash', async () => {
    await engine.query('SELECT 1');
    const child = (engine as unknown as { child: ChildProcess }).child;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    expect((await engine.query('SELECT 7 AS seven')).rows).toEqual([{ seven: 7 }]);
  });

  it('waits while another process holds its data (the engine of a server just killed), then opens it', async () => {
    const path = join(dir, 'held');
    const holder = new EmbeddedEngine(path, { confined: false });
    await holder.query('SELECT 1');
    const next = new EmbeddedEngine(path, { confined: false });
    try {
      const started = Date.now();
      const answer = next.query('SELECT 8 AS eight');
      setTimeout(() => void holder.close(), 1_500);
      expect((await answer).rows).toEqual([{ eight: 8 }]);
      expect(Date.now() - started).toBeGreaterThan(1_000);
    } finally {
      await Promise.all([holder.close(), next.close()]);
    }
  });

  it('ends at once when its owner is killed mid-statement, so the data is free for the next', async () => {
    const path = join(dir, 'orphaned');
    const script = join(dir, 'owner.mts');
    const engineModule = new URL('./embedded-engine.ts', import.meta.url).pathname;
    await writeFile(
      script,
      `import { EmbeddedEngine } from ${JSON.stringify(engineModule)};
       const engine = new EmbeddedEngine(${JSON.stringify(path)}, { confined: false });
       await engine.query('SELECT 1');
       engine.query('SELECT count() FROM numbers_mt(1e12) WHERE sipHash64(number) = 1').catch(() => {});
       console.log(engine.processId());`,
    );
    const owner = spawn(process.execPath, ['--import', 'tsx', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const pid = Number(
      await new Promise<string>((resolve) => owner.stdout?.once('data', (d) => resolve(String(d)))),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    owner.kill('SIGKILL');
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    const started = Date.now();
    while (alive() && Date.now() - started < 5_000) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(alive()).toBe(false);
    const next = new EmbeddedEngine(path, { confined: false });
    try {
      expect((await next.query('SELECT 9 AS nine')).rows).toEqual([{ nine: 9 }]);
    } finally {
      await next.close();
    }
  });
});
