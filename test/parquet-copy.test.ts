import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedEngine, literal } from '../src/engine/index.js';
import { createPipe, sql, waitForState } from './support/runtime.js';
import { serviceEngine, startSluice, type TestSluice } from './support/sluice.js';

const ROWS = 1000;
const COLUMNS = [
  { name: 'id', type: 'UInt64' },
  { name: 'name', type: 'String' },
];

/** A one-off Parquet pipe into `pq.<table>`; with `withFile`, the virtual column `_file` too. */
function pipe(table: string, url: string, withFile = false) {
  const columns = [...COLUMNS, ...(withFile ? [{ name: 'file', type: 'String' }] : [])];
  return {
    name: table,
    source: { objectStorage: { format: 'Parquet', url } },
    destination: {
      database: 'pq',
      table,
      tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
      columns,
    },
    fieldMappings: columns.map(({ name }) => ({
      sourceField: name === 'file' ? '_file' : name,
      destinationField: name,
    })),
  };
}

/**
 * A Parquet file whose fields are the table's columns is copied as it is into the service's
 * scratch space and loaded by the service's engine itself (src/pipes/records/copy-load.ts); one
 * the engine refuses is read again through the source reader. Real chDB engines, sandboxed as
 * `npm start` runs them; the service engine's statements are written down to tell the two apart.
 */
describe("Parquet files loaded by the service's engine from a copy (chDB)", () => {
  let s: TestSluice;
  let writer: EmbeddedEngine;
  /** The service engine's loads of a Parquet copy (FROM INFILE ... FORMAT Parquet). */
  const copiesLoaded: string[] = [];
  const files = (dir: string) => join(s.dataDir, 'files', dir);

  async function writeParquet(path: string, from: number, columns = ['id', 'name']) {
    const values: Record<string, [string, string]> = {
      id: ['id UInt64', `number + ${from}`],
      name: ['name String', `concat('n', toString(number + ${from}))`],
      extra: ['extra String', "'not a column'"],
    };
    const structure = columns.map((column) => values[column]?.[0]).join(', ');
    await writer.execute(
      `INSERT INTO FUNCTION file(${literal(path)}, 'Parquet', ${literal(structure)})
       SELECT ${columns.map((column) => values[column]?.[1]).join(', ')} FROM numbers(${ROWS})`,
    );
  }

  beforeAll(async () => {
    s = await startSluice({ runtime: true });
    writer = new EmbeddedEngine(join(s.dataDir, 'writer'), { confined: false });
    for (const dir of ['good', 'mixed', 'shapes', 'equal']) await mkdir(files(dir), { recursive: true });
    // Every row twice in a file, and a second file equal to the first.
    await writer.execute(
      `INSERT INTO FUNCTION file(${literal(join(files('equal'), 'a.parquet'))}, 'Parquet', 'id UInt64, name String')
       SELECT intDiv(number, 2), concat('n', toString(intDiv(number, 2))) FROM numbers(${ROWS})`,
    );
    await writeFile(join(files('equal'), 'b.parquet'), await readFile(join(files('equal'), 'a.parquet')));
    // Compressed as a whole, a field the table lacks (first), a column the file lacks.
    await writeParquet(join(files('shapes'), 'a.parquet'), 0);
    await writeFile(
      join(files('shapes'), 'a.parquet.gz'),
      gzipSync(await readFile(join(files('shapes'), 'a.parquet'))),
    );
    await rm(join(files('shapes'), 'a.parquet'));
    await writeParquet(join(files('shapes'), 'b.parquet'), ROWS, ['extra', 'name', 'id']);
    await writeParquet(join(files('shapes'), 'c.parquet'), 2 * ROWS, ['id']);
    await writeParquet(join(files('good'), 'a.parquet'), 0);
    await writeParquet(join(files('good'), 'b.parquet'), ROWS);
    await writeParquet(join(files('mixed'), 'a.parquet'), 0);
    await writeFile(join(files('mixed'), 'b.parquet'), 'PAR1 this is not parquet at all PAR1');
    await writeParquet(join(files('mixed'), 'c.parquet'), 2 * ROWS);
    const engine = serviceEngine(s);
    const execute = engine.execute.bind(engine);
    engine.execute = (text, options) => {
      if (/ FROM INFILE .* FORMAT Parquet$/s.test(text)) copiesLoaded.push(text);
      return execute(text, options);
    };
  }, 60_000);
  afterAll(async () => {
    await writer?.close();
    await s?.close();
  });

  const landed = (table: string) =>
    sql(
      s,
      `SELECT count() AS n, sum(id) AS ids, countIf(name != concat('n', toString(id))) AS wrong FROM pq.${table}`,
    );
  const sumOf = (from: number, to: number) => ((to - 1 + from) * (to - from)) / 2;

  it('loads the copies in the service engine, and the same files through the source reader where a virtual column is mapped, the same rows', async () => {
    copiesLoaded.length = 0;
    const copied = await createPipe(s, pipe('copied', 'file:///good/*.parquet'));
    expect(await waitForState(s, copied, 'Completed')).toMatchObject({ rowsWritten: 2 * ROWS, filesDone: 2 });
    expect(copiesLoaded).toHaveLength(2);
    // Each copy is removed once loaded.
    const scratch = await readdir(join(s.dataDir, 'services', s.serviceId, 'scratch'));
    expect(scratch.filter((name) => name.includes('copy-'))).toEqual([]);
    expect(await landed('copied')).toEqual([{ n: 2 * ROWS, ids: sumOf(0, 2 * ROWS), wrong: 0 }]);

    copiesLoaded.length = 0;
    const withFile = await createPipe(s, pipe('with_file', 'file:///good/*.parquet', true));
    expect(await waitForState(s, withFile, 'Completed')).toMatchObject({ rowsWritten: 2 * ROWS });
    expect(copiesLoaded).toHaveLength(0);
    expect(await landed('with_file')).toEqual([{ n: 2 * ROWS, ids: sumOf(0, 2 * ROWS), wrong: 0 }]);
    expect(await sql(s, 'SELECT file, count() AS n FROM pq.with_file GROUP BY file ORDER BY file')).toEqual([
      { file: 'a.parquet', n: ROWS },
      { file: 'b.parquet', n: ROWS },
    ]);
  });

  it('reads what the source reader reads from compressed files, fields the table lacks and columns a file lacks', async () => {
    copiesLoaded.length = 0;
    const copied = await createPipe(s, pipe('shapes', 'file:///shapes/*'));
    expect(await waitForState(s, copied, 'Completed')).toMatchObject({
      rowsWritten: 3 * ROWS,
      badRecords: 0,
    });
    expect(copiesLoaded).toHaveLength(3);
    const throughReader = await createPipe(s, pipe('shapes_reader', 'file:///shapes/*', true));
    expect(await waitForState(s, throughReader, 'Completed')).toMatchObject({ rowsWritten: 3 * ROWS });
    expect(copiesLoaded).toHaveLength(3);
    const rows = (table: string) =>
      sql(
        s,
        `SELECT count() AS n, sum(id) AS ids, countIf(name = '') AS unnamed, sum(cityHash64(name)) % 1000003 AS names FROM pq.${table}`,
      );
    const copiedRows = await rows('shapes');
    expect(copiedRows).toEqual(await rows('shapes_reader'));
    expect(copiedRows[0]).toMatchObject({ n: 3 * ROWS, ids: sumOf(0, 3 * ROWS), unnamed: ROWS });
  });

  it('passes a Null destination each row once, though the engine refused a copy and the batch was read again', async () => {
    await sql(s, 'CREATE DATABASE IF NOT EXISTS pq');
    await sql(s, 'CREATE TABLE pq.passed (id UInt64, name String) ENGINE = Null');
    await sql(s, 'CREATE TABLE pq.kept (id UInt64, name String) ENGINE = MergeTree ORDER BY id');
    await sql(s, 'CREATE MATERIALIZED VIEW pq.passing TO pq.kept AS SELECT id, name FROM pq.passed');
    copiesLoaded.length = 0;
    const id = await createPipe(s, {
      name: 'passed',
      source: { objectStorage: { format: 'Parquet', url: 'file:///mixed/*.parquet' } },
      destination: { database: 'pq', table: 'passed', managedTable: false, columns: COLUMNS },
    });
    expect(await waitForState(s, id, 'Completed')).toMatchObject({
      rowsWritten: 2 * ROWS,
      badRecords: 1,
      filesDone: 3,
    });
    // The batch's first read loaded copies in the engine (the corrupt one refused), its second
    // went through the source reader; the view saw only what the batch passed on once.
    expect(copiesLoaded.length).toBeGreaterThanOrEqual(1);
    expect(s.logs.join('\n')).toContain("could not load a batch's files itself");
    expect(await landed('kept')).toEqual([
      { n: 2 * ROWS, ids: sumOf(0, ROWS) + sumOf(2 * ROWS, 3 * ROWS), wrong: 0 },
    ]);
    expect(await sql(s, 'SELECT source FROM pq.passed_pipes_error')).toEqual([{ source: 'mixed/b.parquet' }]);
  });

  it('keeps equal records: every row twice in a file, and two equal files, land four times', async () => {
    copiesLoaded.length = 0;
    const id = await createPipe(s, pipe('equal', 'file:///equal/*.parquet'));
    expect(await waitForState(s, id, 'Completed')).toMatchObject({ rowsWritten: 2 * ROWS, filesDone: 2 });
    expect(copiesLoaded).toHaveLength(2);
    expect(
      await sql(
        s,
        'SELECT count() AS n, uniqExact(id) AS ids, max(c) AS most, min(c) AS least FROM (SELECT id, count() AS c FROM pq.equal GROUP BY id)',
      ),
    ).toEqual([{ n: ROWS / 2, ids: ROWS / 2, most: 4, least: 4 }]);
  });

  it('reads a batch again through the source reader when the engine refuses a copy: the good files land once, the bad one is set aside', async () => {
    copiesLoaded.length = 0;
    const id = await createPipe(s, pipe('mixed', 'file:///mixed/*.parquet'));
    const status = await waitForState(s, id, 'Completed');
    expect(status).toMatchObject({ rowsWritten: 2 * ROWS, badRecords: 1, filesDone: 3 });
    // The first read tried each file's copy in the engine (the corrupt one refused).
    expect(copiesLoaded.length).toBeGreaterThanOrEqual(1);
    expect(await landed('mixed')).toEqual([
      { n: 2 * ROWS, ids: sumOf(0, ROWS) + sumOf(2 * ROWS, 3 * ROWS), wrong: 0 },
    ]);
    const errors = await sql(s, 'SELECT source, row, error FROM pq.mixed_pipes_error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ source: 'mixed/b.parquet', row: 0 });
    // The reason is the source reader's, of the file as the pipe names it: no scratch path.
    expect(String(errors[0]?.error)).not.toContain('scratch');
    expect(s.logs.join('\n')).toContain("could not load a batch's files itself");
  });
});
