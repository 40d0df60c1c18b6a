import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServedSluice } from './support/cli.js';
import { KILL_STEPS, killedAtEachStep, type Served, statusUntil, stop } from './support/kill-steps.js';

// Every record lands, even when two are alike: equal files, equal lines and a user's equal inserts
// are each written as many times as they come, through a real server process (`sluice serve`,
// runtime on), killed with SIGKILL at each step of a batch (src/failpoints.ts).

/** Two rows of different partitions (k), so a batch moves two partitions. */
const FILE = '{"k": 1, "v": "a"}\n{"k": 2, "v": "b"}\n';

let dataDir: string;
const servers: ServedSluice[] = [];
let served: Served;
let ids: Map<string, string>;

const pipe = (name: string, url: string, extra: Record<string, unknown> = {}) => ({
  name,
  source: { objectStorage: { format: 'JSONEachRow', url, ...extra } },
  destination: {
    database: 'equal',
    table: name.replace(/-/g, '_'),
    tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['k'], partitionBy: 'k' },
    columns: [
      { name: 'k', type: 'UInt8' },
      { name: 'v', type: 'String' },
    ],
  },
  // Two equal files in every batch: the case an engine deduplicating blocks collapses.
  settings: { object_storage_max_file_count: 2, object_storage_polling_interval_ms: 100 },
});

async function files(dir: string, count: number, text = FILE): Promise<void> {
  await mkdir(join(dataDir, 'files', dir), { recursive: true });
  for (let i = 0; i < count; i += 1) await writeFile(join(dataDir, 'files', dir, `${i}.ndjson`), text);
}

/** What a table holds: each distinct row and how many times. */
const landed = (table: string) =>
  served.query(`SELECT k, v, toUInt32(count()) AS n FROM equal.${table} GROUP BY k, v ORDER BY k, v`);

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sluice-equal-files-'));
  await files('two', 2);
  await files('ten', 10);
  await files('lines', 1, '{"k": 7, "v": "same"}\n'.repeat(1_000));
  await files('renamed', 1);
  // Ten equal files, then a file of identical lines: six batches of two files.
  await files('killed', 10);
  await writeFile(join(dataDir, 'files/killed/lines.ndjson'), '{"k": 7, "v": "same"}\n'.repeat(1_000));
  // One pipe per step of a batch, each killed there on its first batch, then the rest on a server
  // that is not told to die.
  const killed = await killedAtEachStep({
    dataDir,
    env: {},
    pipes: KILL_STEPS.map((step) => ({
      step,
      body: pipe(`killed-${step}`, 'file:///killed/*.ndjson', { isContinuous: true }),
    })),
    started: (server) => servers.push(server),
  });
  served = killed.served;
  ids = killed.ids;
  for (const body of [
    pipe('two-equal', 'file:///two/*.ndjson'),
    pipe('ten-equal', 'file:///ten/*.ndjson'),
    pipe('equal-lines', 'file:///lines/*.ndjson'),
    pipe('renamed', 'file:///renamed/*.ndjson', { isContinuous: true }),
  ]) {
    const created = await served.call(served.pipes, 'POST', body);
    expect(created.status, created.error).toBe(200);
    ids.set(body.name, created.result.id);
  }
}, 600_000);

afterAll(async () => {
  for (const server of servers) if (server.child.exitCode === null) server.child.kill('SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
});

describe('equal files and lines each land (object storage, a real server process)', () => {
  it.each([
    ['two-equal', 2],
    ['ten-equal', 10],
  ])('%s files of the same content: every row of each', async (name, count) => {
    const status = await statusUntil(served, ids.get(name) as string, (s) => s.state === 'Completed');
    expect(await landed(name.replace(/-/g, '_'))).toEqual([
      { k: 1, v: 'a', n: count },
      { k: 2, v: 'b', n: count },
    ]);
    expect(status).toMatchObject({ filesDone: count, rowsWritten: 2 * count, badRecords: 0 });
  });

  it('one file of 1,000 identical lines: 1,000 rows', async () => {
    const status = await statusUntil(
      served,
      ids.get('equal-lines') as string,
      (s) => s.state === 'Completed',
    );
    expect(await landed('equal_lines')).toEqual([{ k: 7, v: 'same', n: 1_000 }]);
    expect(status).toMatchObject({ filesDone: 1, rowsWritten: 1_000 });
  });

  it('the same file under a new name in a continuous pipe lands again', async () => {
    const id = ids.get('renamed') as string;
    await statusUntil(served, id, (s) => s.filesDone === 1);
    await copyFile(join(dataDir, 'files/renamed/0.ndjson'), join(dataDir, 'files/renamed/1.ndjson'));
    const status = await statusUntil(served, id, (s) => s.filesDone === 2);
    expect(await landed('renamed')).toEqual([
      { k: 1, v: 'a', n: 2 },
      { k: 2, v: 'b', n: 2 },
    ]);
    expect(status).toMatchObject({ state: 'Running', rowsWritten: 4 });
  });

  it.each(KILL_STEPS)(
    'killed at %s of its first batch: every row of ten equal files, of identical lines, and of a file copied under a new name',
    async (step) => {
      const id = ids.get(`killed-${step}`) as string;
      await statusUntil(served, id, (s) => s.filesDone >= 11);
      // The same file again, under a name after the others: the continuous pipes read it too.
      if (step === KILL_STEPS[0])
        await copyFile(join(dataDir, 'files/killed/0.ndjson'), join(dataDir, 'files/killed/renamed.ndjson'));
      const status = await statusUntil(served, id, (s) => s.filesDone === 12);
      expect(await landed(`killed_${step.replace(/-/g, '_')}`)).toEqual([
        { k: 1, v: 'a', n: 11 },
        { k: 2, v: 'b', n: 11 },
        { k: 7, v: 'same', n: 1_000 },
      ]);
      expect(status).toMatchObject({ state: 'Running', rowsWritten: 1_022, badRecords: 0 });
    },
  );

  it("a user's own INSERT of the same block twice into a managed table: both land", async () => {
    const insert = "INSERT INTO equal.two_equal (k, v) VALUES (3, 'mine'), (4, 'mine')";
    await served.query(insert);
    await served.query(insert);
    expect(
      await served.query(
        "SELECT k, toUInt32(count()) AS n FROM equal.two_equal WHERE v = 'mine' GROUP BY k ORDER BY k",
      ),
    ).toEqual([
      { k: 3, n: 2 },
      { k: 4, n: 2 },
    ]);
    await stop(served);
  });
});
