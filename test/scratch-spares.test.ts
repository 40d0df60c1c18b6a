import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/engine/index.js';
import { ScratchSpares, spareTexts, writeWhole } from '../src/pipes/records/index.js';
import { serviceEngine, startSluice, type TestSluice } from './support/sluice.js';

// A batch's text file (a stream's messages, a snapshot range's COPY text) is kept once the service's
// engine loaded it, and the next batch writes its text over it: its pages are in memory already
// (src/pipes/records/scratch-text.ts). The service's real engine and scratch space.

describe("batches' text files, kept and written over", () => {
  let s: TestSluice;
  let engine: Engine;
  beforeAll(async () => {
    s = await startSluice({ runtime: false });
    engine = serviceEngine(s);
    // Started (the scratch space is made with the engine's process).
    await engine.query('SELECT 1');
  });
  afterAll(async () => {
    await s?.close();
  });

  const spares = async () =>
    (await readdir(dirname(engine.scratchPath('x')))).filter((name) => name.startsWith('transient-text-'));

  it('the next batch takes a kept file under its own name and holds exactly its own, shorter, text', async () => {
    const first = engine.scratchPath('batch-1.json');
    await writeWhole(first, [Buffer.from('{"id":1}\n{"id":2}\n'), Buffer.from('{"id":3}\n')], false);
    const { ino } = await stat(first);
    await spareTexts.keep(engine, 'batch-1.json');
    expect(await spares()).toHaveLength(1);

    expect(await spareTexts.take(engine, 'batch-2.json')).toBe(true);
    const second = engine.scratchPath('batch-2.json');
    await writeWhole(second, [Buffer.from('{"id":4}\n')], true);
    expect(await readFile(second, 'utf8')).toBe('{"id":4}\n');
    expect((await stat(second)).ino).toBe(ino);
    expect(await spares()).toHaveLength(0);
    // None kept: the caller makes a new file.
    expect(await spareTexts.take(engine, 'batch-3.json')).toBe(false);
    await engine.removeScratch('batch-2.json');
  });

  it('keeps as many as a pipe has batches in flight, and removes the others', async () => {
    for (let n = 0; n < 6; n++) {
      await writeFile(engine.scratchPath(`kept-${n}.json`), `${n}\n`);
      await spareTexts.keep(engine, `kept-${n}.json`);
    }
    expect(await spares()).toHaveLength(4);
    const left = (await readdir(dirname(engine.scratchPath('x')))).filter((name) => name.startsWith('kept-'));
    expect(left).toEqual([]);
  });

  it('removes the spares once no load took or kept one for the idle time, and each take or keep pushes that back', async () => {
    const idle = new ScratchSpares('idle', 4, 600);
    const kept = async () =>
      (await readdir(dirname(engine.scratchPath('x')))).filter((name) => name.startsWith('transient-idle-'));
    for (const n of [1, 2]) {
      await writeFile(engine.scratchPath(`idle-${n}.json`), `${n}\n`);
      await idle.keep(engine, `idle-${n}.json`);
    }
    expect(await kept()).toHaveLength(2);
    // Used again within the idle time: still kept after it has passed since the first keep.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await idle.take(engine, 'idle-3.json')).toBe(true);
    await idle.keep(engine, 'idle-3.json');
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await kept()).toHaveLength(2);
    await expect.poll(kept, { timeout: 3000, interval: 50 }).toHaveLength(0);
    expect(idle.removalsFailed).toBe(0);
    // None left to take: the next load makes its file.
    expect(await idle.take(engine, 'idle-4.json')).toBe(false);
  });

  it('a file never written (a batch that failed before its text) is nothing to keep', async () => {
    const before = await spares();
    await spareTexts.keep(engine, 'never-written.json');
    expect(await spares()).toEqual(before);
  });
});
