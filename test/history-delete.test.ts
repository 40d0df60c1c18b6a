import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/engine/index.js';
import { createFilePipe, waitForState } from './support/runtime.js';
import { serviceEngine, startSluice, type TestSluice } from './support/sluice.js';

// A pipe's state rows are written into its history in the background, in the order of its moves
// (src/pipes/runtime/history-recorder.ts). A row waiting behind a slow one read its pipe only once
// its turn came: deleted meanwhile, the pipe was gone and the row was lost, without a word. The
// service's engine here is real (chDB); its writes of state rows are held back a second, as a
// service's first row is while it makes the history's tables.

const HELD_MS = 1_000;

describe("a pipe deleted right after its last move keeps that move's state row", () => {
  let s: TestSluice;
  let engine: Engine;
  beforeAll(async () => {
    s = await startSluice();
    engine = serviceEngine(s);
    const execute = engine.execute.bind(engine);
    engine.execute = async (sql, options) => {
      if (sql.startsWith('INSERT INTO `_sluice_history`.`pipe_events`'))
        await new Promise((resolve) => setTimeout(resolve, HELD_MS));
      return execute(sql, options);
    };
  });
  afterAll(async () => {
    await s?.close();
  });

  it('writes Running and Completed before the delete answers', async () => {
    await mkdir(join(s.dataDir, 'files', 'gone'), { recursive: true });
    await writeFile(join(s.dataDir, 'files', 'gone', 'a.ndjson'), '{"id": 1}\n{"id": 1}\n');
    const pipeId = await createFilePipe(s, 'gone', 'file:///gone/*.ndjson');
    // Completed in the store while Running's row is still held: Completed's waits behind it.
    await waitForState(s, pipeId, 'Completed');
    const deleted = await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${pipeId}` });
    expect(deleted.statusCode).toBe(200);
    const states = await engine.query(
      `SELECT state FROM _sluice_history.pipe_events WHERE pipe_id = '${pipeId}' AND kind = 'state' ORDER BY at`,
    );
    expect(states.rows.map((row) => row.state)).toEqual(['Running', 'Completed']);
    expect(s.logs.join('')).not.toMatch(/the pipe is gone/);
  });
});
