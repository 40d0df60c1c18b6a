import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { historyStage } from '../src/pipes/runtime/history-stage.js';
import { stageNames } from '../src/pipes/runtime/stages.js';
import { createPipe, sql, statusOf, waitForCommittedToEnd, waitForState } from './support/runtime.js';
import { startSluice, type TestSluice } from './support/sluice.js';
import { untilEqual } from './support/wait.js';

const events = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) =>
    JSON.stringify({ id: from + i, name: `event ${from + i}`, amount: (from + i) * 1.5 }),
  )
    .join('\n')
    .concat('\n');

function localPipe(name: string, url: string, extra: Record<string, unknown> = {}, table = name) {
  return {
    name,
    source: { objectStorage: { type: 's3', format: 'JSONEachRow', url, ...extra } },
    destination: {
      database: 'local',
      table,
      tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
      columns: [
        { name: 'id', type: 'UInt64' },
        { name: 'name', type: 'String' },
        { name: 'amount', type: 'Float64' },
        { name: 'file', type: 'String' },
      ],
    },
    fieldMappings: [
      { sourceField: 'id', destinationField: 'id' },
      { sourceField: 'name', destinationField: 'name' },
      { sourceField: 'amount', destinationField: 'amount' },
      { sourceField: '_file', destinationField: 'file' },
    ],
  };
}

describe('object-storage pipes over file:// (local files directory)', () => {
  let s: TestSluice;
  let files: string;
  beforeAll(async () => {
    s = await startSluice({ runtime: true });
    files = join(s.dataDir, 'files');
    await mkdir(join(files, 'batch/a'), { recursive: true });
    await mkdir(join(files, 'batch/b'), { recursive: true });
    await writeFile(join(files, 'batch/a/1.ndjson'), events(0, 100));
    await writeFile(join(files, 'batch/a/2.ndjson'), events(100, 100));
    await writeFile(join(files, 'batch/b/3.ndjson'), events(200, 50));
    await writeFile(join(files, 'batch/b/skip.csv'), 'not,json\n');
  });
  afterAll(() => s.close());

  it('** matches across / wherever it stands, as the engine and the storage providers read it', async () => {
    await mkdir(join(files, 'logs/2026/11/01'), { recursive: true });
    await writeFile(join(files, 'logs/2026/11/01/x.ndjson'), events(0, 10));
    await writeFile(join(files, 'logs/top.ndjson'), events(10, 5));
    await writeFile(join(files, 'logs/2026/other.csv'), 'not,json\n');
    const id = await createPipe(s, localPipe('deep', 'file:///logs/**.ndjson'));
    const status = await waitForState(s, id, 'Completed');
    expect(status).toMatchObject({ filesDone: 2, rowsWritten: 15 });
    const byFile = await sql(s, 'SELECT file, count() AS n FROM local.deep GROUP BY file ORDER BY file');
    expect(byFile).toEqual([
      { file: 'top.ndjson', n: 5 },
      { file: 'x.ndjson', n: 10 },
    ]);
  });

  it('filesPending counts each file once: found files are pending or claimed, never both', async () => {
    await mkdir(join(files, 'counted'), { recursive: true });
    for (let i = 0; i < 6; i += 1)
      await writeFile(join(files, `counted/${i}.ndjson`), events(i * 1000, 1000));
    const id = await createPipe(s, {
      ...localPipe('counted', 'file:///counted/*.ndjson'),
      settings: { object_storage_max_file_count: 1 },
    });
    const seen: number[] = [];
    const deadline = Date.now() + 60_000;
    for (;;) {
      const status = await statusOf(s, id);
      seen.push(status.filesDone + status.filesPending);
      if (status.state === 'Completed') break;
      if (status.state === 'Failed') throw new Error(status.reason);
      if (Date.now() > deadline) throw new Error(`pipe still ${status.state}: ${JSON.stringify(status)}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(Math.max(...seen)).toBeLessThanOrEqual(6);
    expect(seen.at(-1)).toBe(6);
  });

  it('a one-off pipe ingests every matching file once and ends Completed', async () => {
    const id = await createPipe(s, localPipe('oneoff', 'file:///batch/**/*.ndjson'));
    const status = await waitForState(s, id, 'Completed');
    expect(status).toMatchObject({
      filesDone: 3,
      filesPending: 0,
      rowsWritten: 250,
      badRecords: 0,
      lastError: null,
      lastErrorCode: null,
    });
    expect(status.bytesWritten).toBeGreaterThan(0);
    const rows = await sql(
      s,
      'SELECT count() AS n, sum(id) AS ids, uniqExact(file) AS files FROM local.oneoff',
    );
    expect(rows).toEqual([{ n: 250, ids: (249 * 250) / 2, files: 3 }]);
    const metrics = (await s.request({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toContain(`sluice_pipe_rows_written{pipe_id="${id}"} 250`);
    expect(metrics).toContain(`sluice_pipe_files_done{pipe_id="${id}"} 3`);
    expect(metrics).toContain(`sluice_pipe_state{pipe_id="${id}",state="Completed"} 1`);
    const byFile = await sql(s, 'SELECT file, count() AS n FROM local.oneoff GROUP BY file ORDER BY file');
    expect(byFile).toEqual([
      { file: '1.ndjson', n: 100 },
      { file: '2.ndjson', n: 100 },
      { file: '3.ndjson', n: 50 },
    ]);
  });

  it('a continuous pipe picks up a later file, and only keys after the last ingested one', async () => {
    const id = await createPipe(
      s,
      localPipe('continuous', 'file:///batch/**/*.ndjson', { isContinuous: true }, 'continuous'),
    );
    // A settings change restarts the running worker with the new polling interval.
    await s.request({
      method: 'PUT',
      url: `${s.pipesUrl}/${id}/settings`,
      body: { object_storage_polling_interval_ms: 100 },
    });
    await waitForState(s, id, 'Running');
    await expectEventually(
      async () => (await sql(s, 'SELECT count() AS n FROM local.continuous'))[0]?.n === 250,
    );
    // Written first, so the listing that finds 4.ndjson finds it too, were it listed.
    await writeFile(join(files, 'batch/a/0-too-early.ndjson'), events(9000, 5)); // before the cursor: never read
    await writeFile(join(files, 'batch/b/4.ndjson'), events(250, 10));
    await expectEventually(
      async () => (await sql(s, 'SELECT count() AS n FROM local.continuous'))[0]?.n === 260,
    );
    // Claimed and committed up to 4.ndjson with nothing pending: a file read after it would show now.
    await waitForCommittedToEnd(
      s,
      id,
      (cursor, status) => String(cursor).endsWith('batch/b/4.ndjson') && status.filesPending === 0,
    );
    expect(await sql(s, 'SELECT count() AS n, max(id) AS top FROM local.continuous')).toEqual([
      { n: 260, top: 259 },
    ]);
    const stopped = await s.request({
      method: 'PATCH',
      url: `${s.pipesUrl}/${id}/state`,
      body: { command: 'stop' },
    });
    expect(stopped.json.result.state).toBe('Stopped');
  });

  it("a continuous pipe's stages hold nothing between batches: a move's empty marks never reach the destination", async () => {
    // Each file its own batch, each into a partition of its own: a move leaves an empty part in
    // its stage for each part it took, and a stage never merges; kept, they would pile up and
    // every later batch would move them all, old partitions too, into the table.
    await mkdir(join(files, 'marks'), { recursive: true });
    for (let i = 0; i < 4; i += 1) await writeFile(join(files, `marks/${i}.ndjson`), events(i * 10, 10));
    const body = localPipe('marks', 'file:///marks/*.ndjson', { isContinuous: true });
    const id = await createPipe(s, {
      ...body,
      destination: {
        ...body.destination,
        tableDefinition: { ...body.destination.tableDefinition, partitionBy: 'intDiv(id, 10)' },
      },
      settings: { object_storage_max_file_count: 1, object_storage_polling_interval_ms: 100 },
    });
    await waitForCommittedToEnd(
      s,
      id,
      (cursor, status) => String(cursor).endsWith('marks/3.ndjson') && status.filesPending === 0,
    );
    const stages = [0, 1, 2, 3].flatMap((slot) => [
      ...Object.values(stageNames(id, slot)),
      historyStage(id, slot),
    ]);
    const partsIn = (where: string) =>
      sql(s, `SELECT count() AS n, countIf(rows = 0) AS empty FROM system.parts WHERE active AND ${where}`);
    // Emptied after each batch's commit, in the background (src/pipes/runtime/stage-emptying.ts).
    await untilEqual(
      () => partsIn(`database = '_sluice_staging' AND table IN (${stages.map((t) => `'${t}'`).join(', ')})`),
      [{ n: 0, empty: 0 }],
      "the pipe's stages empty",
      5_000,
    );
    expect(await partsIn("database = 'local' AND table = 'marks'")).toEqual([{ n: 4, empty: 0 }]);
    expect(await sql(s, 'SELECT count() AS n, uniqExact(id) AS ids FROM local.marks')).toEqual([
      { n: 40, ids: 40 },
    ]);
    await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${id}` });
  });

  it('a pipe deleted in the store by another node: the worker here stops within a sweep', async () => {
    await mkdir(join(files, 'gone'), { recursive: true });
    await writeFile(join(files, 'gone/1.ndjson'), events(0, 10));
    const id = await createPipe(
      s,
      localPipe('gone', 'file:///gone/*.ndjson', { isContinuous: true }, 'gone'),
    );
    await waitForState(s, id, 'Running');
    await expectEventually(async () => (await sql(s, 'SELECT count() AS n FROM local.gone'))[0]?.n === 10);
    // What a node sharing the store (SLUICE_DATABASE_URL) writes when it deletes the pipe: no
    // call reaches this node's runtime, which learns of it from the store alone.
    await s.sluice.store.repos.pipes.delete(id);
    const stopped = (line: string) => line.includes(id) && line.includes('deleted under its worker');
    await expectEventually(async () => s.logs.some(stopped), 20_000);
    // Its worker is gone: a file after that is never claimed (a claim would fail and retry).
    await writeFile(join(files, 'gone/2.ndjson'), events(10, 10));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(s.logs.filter((line) => line.includes(id) && line.includes('retrying'))).toEqual([]);
    expect(await sql(s, 'SELECT count() AS n FROM local.gone')).toEqual([{ n: 10 }]);
  });

  it('startAfter skips the keys up to it', async () => {
    const id = await createPipe(
      s,
      localPipe('after', 'file:///batch/**/*.ndjson', { startAfter: 'batch/a/2.ndjson' }),
    );
    await waitForState(s, id, 'Completed');
    expect(await sql(s, 'SELECT min(id) AS low, count() AS n FROM local.after')).toEqual([
      { low: 200, n: 60 },
    ]);
  });

  it('a file:// URL cannot leave the local files directory', async () => {
    // The URL resolves inside the files directory, where there is no etc/: nothing is read.
    const dots = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: localPipe('escape', 'file:///../../etc/*'),
    });
    expect(dots.statusCode).toBe(400);
    expect(dots.json.error).toContain('file:///../../etc/* matches no file');
    expect(dots.json.code).toBe('SLUICE_ERR_VALIDATION');
    const encoded = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: localPipe('encoded', 'file:///..%2F..%2Fetc/passwd'),
    });
    expect(encoded.statusCode).toBe(400);
    expect(encoded.json.error).toContain('source.objectStorage.url: not a usable file:// URL');
    expect(encoded.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('a symbolic link in the files directory does not lead out of it', async () => {
    const { symlink } = await import('node:fs/promises');
    await symlink('/etc', join(files, 'etc-link'));
    const linked = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: localPipe('linked', 'file:///etc-link/*'),
    });
    expect(linked.statusCode).toBe(400);
    expect(linked.json.error).toContain('file:///etc-link/* matches no file');
    expect(linked.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('runs scaling.replicas batches at once, each file still exactly once', async () => {
    const dir = join(files, 'many');
    await mkdir(dir, { recursive: true });
    for (let i = 0; i < 24; i += 1)
      await writeFile(join(dir, `${String(i).padStart(2, '0')}.ndjson`), events(i * 10, 10));
    const body = {
      ...localPipe('replicas', 'file:///many/*.ndjson'),
      scaling: { replicas: 3 },
      settings: { object_storage_max_file_count: 2 },
    };
    const id = await createPipe(s, body);
    expect(await waitForState(s, id, 'Completed')).toMatchObject({ filesDone: 24, rowsWritten: 240 });
    expect(await sql(s, 'SELECT count() AS n, uniqExact(id) AS ids FROM local.replicas')).toEqual([
      { n: 240, ids: 240 },
    ]);
    // A data stage and a stage of the pipe's history per slot (README, "Pipe history").
    const slots = await sql(
      s,
      `SELECT countIf(name NOT LIKE '%\\_history') AS data, countIf(name LIKE '%\\_history') AS history
         FROM system.tables WHERE database = '_sluice_staging' AND name LIKE 'stage\\_${id.replace(/-/g, '')}\\_%'`,
    );
    expect(slots).toEqual([{ data: 3, history: 3 }]);
  });

  it('JSONAsObject reads each record whole, into JSON and String columns', async () => {
    await writeFile(join(files, 'objects.ndjson'), '{"a": 1, "b": {"c": "x"}}\n{"a": 2}\n');
    const id = await createPipe(s, {
      name: 'objects',
      source: { objectStorage: { format: 'JSONAsObject', url: 'file:///objects.ndjson' } },
      destination: {
        database: 'local',
        table: 'objects',
        tableDefinition: { engine: { type: 'MergeTree' } },
        columns: [
          { name: 'doc', type: 'JSON' },
          { name: 'text', type: 'String' },
        ],
      },
      fieldMappings: [
        { sourceField: 'json', destinationField: 'doc' },
        { sourceField: 'json', destinationField: 'text' },
      ],
    });
    await waitForState(s, id, 'Completed');
    expect(
      await sql(
        s,
        'SELECT toInt64(doc.a) AS a, toString(doc.b.c) AS c, text FROM local.objects ORDER BY text',
      ),
    ).toEqual([
      { a: 1, c: 'x', text: '{"a":1,"b":{"c":"x"}}' },
      { a: 2, c: '', text: '{"a":2}' },
    ]);
  });
});

async function expectEventually(check: () => Promise<boolean>, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('condition not met in time');
}
