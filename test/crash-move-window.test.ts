import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ServedSluice } from './support/cli.js';
import { undoStageCovers } from './support/engine-window.js';
import { dieAt, serve, statusUntil, stop } from './support/kill-steps.js';
import { untilContains } from './support/wait.js';

// A move into the destination is two renames in the engine (src/engine/stages.ts,
// dropMovedStageParts): the part into the destination, then the empty part that covers it in the stage.
// An engine killed between the two has the batch in both tables when it starts again. The window is
// a fraction of a millisecond, so the test makes it: the server is killed (SIGKILL) after the first
// of its batch's two moves, and that move's covering parts are taken out of the stopped engine's
// directory before it restarts.

const FILE = '{"k": 1, "v": "a"}\n{"k": 2, "v": "b"}\n';
const servers: ServedSluice[] = [];
const dirs: string[] = [];

afterAll(async () => {
  for (const server of servers) if (server.child.exitCode === null) server.child.kill('SIGKILL');
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('a batch the engine moved just before it was killed (a real server process)', () => {
  it('lands once, though its parts came back in the stage', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-move-window-'));
    dirs.push(dataDir);
    await mkdir(join(dataDir, 'files', 'window'), { recursive: true });
    // Two equal files, two partitions: one batch, two moves, and equal rows that must stay four.
    for (const name of ['a', 'b']) await writeFile(join(dataDir, 'files', 'window', `${name}.ndjson`), FILE);
    const body = {
      name: 'window',
      source: { objectStorage: { format: 'JSONEachRow', url: 'file:///window/*.ndjson' } },
      destination: {
        database: 'window',
        table: 'rows',
        tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['k'], partitionBy: 'k' },
        columns: [
          { name: 'k', type: 'UInt8' },
          { name: 'v', type: 'String' },
        ],
      },
      settings: { object_storage_max_file_count: 2 },
    };
    let pipeId = '';
    let serviceDir = '';
    await dieAt({
      dataDir,
      env: {},
      step: 'between-moves',
      pipeName: 'window',
      started: (server) => servers.push(server),
      act: async (served) => {
        const created = await served.call(served.pipes, 'POST', body);
        expect(created.status, created.error).toBe(200);
        pipeId = created.result.id;
        serviceDir = join(dataDir, 'services', served.pipes.split('/')[5] as string);
      },
    });
    // The first partition moved (from both files' inserts): its two parts are back in the stage.
    expect(await undoStageCovers(serviceDir)).toBe(2);

    const served = await serve(dataDir, {});
    servers.push(served.server);
    const status = await statusUntil(served, pipeId, (s) => s.state === 'Completed');
    const rows = await served.query(
      'SELECT k, v, toUInt32(count()) AS n FROM window.rows GROUP BY k, v ORDER BY k',
    );
    expect(rows).toEqual([
      { k: 1, v: 'a', n: 2 },
      { k: 2, v: 'b', n: 2 },
    ]);
    expect(status.rowsWritten).toBe(4);
    await untilContains(served.server.output, 'were still in their stage: dropped from the stage');
    await stop(served);
  }, 300_000);
});
