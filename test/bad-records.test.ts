import { mkdir, open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPipe, sql, waitForState } from './support/runtime.js';
import { startSluice, type TestSluice } from './support/sluice.js';

const ROWS = 2000;
/** Every hundredth row is broken: 1% malformed. */
const isBad = (i: number) => i % 100 === 37;

function pipe(name: string, url: string, format: string, fields = ['id', 'name']) {
  return {
    name,
    source: { objectStorage: { format, url } },
    destination: {
      database: 'bad',
      table: name,
      tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
      columns: [
        { name: 'id', type: 'UInt64' },
        { name: 'name', type: 'String' },
      ],
    },
    fieldMappings: [
      { sourceField: fields[0], destinationField: 'id' },
      { sourceField: fields[1], destinationField: 'name' },
    ],
  };
}

describe('bad records go to <table>_pipes_error; good rows of the same file still land', () => {
  let s: TestSluice;
  beforeAll(async () => {
    s = await startSluice({ runtime: true });
    const dir = join(s.dataDir, 'files/bad');
    await mkdir(dir, { recursive: true });
    const json = Array.from({ length: ROWS }, (_, i) =>
      isBad(i)
        ? i % 200 === 37
          ? `{"id": "not a number ${i}", "name": "x"}`
          : `{broken json ${i}`
        : JSON.stringify({ id: i, name: `n${i}` }),
    );
    await writeFile(join(dir, 'rows.ndjson'), `${json.join('\n')}\n`);
    const csv = Array.from({ length: ROWS }, (_, i) => (isBad(i) ? `x${i},n${i}` : `${i},n${i}`));
    await writeFile(join(dir, 'rows.csv'), `id,name\n${csv.join('\n')}\n`);
    await writeFile(join(dir, 'corrupt.parquet'), 'PAR1 this is not parquet at all');
    await mkdir(join(s.dataDir, 'files/samples'), { recursive: true });
    await writeFile(
      join(s.dataDir, 'files/samples/early-bad.ndjson'),
      '{"id": 1, "name": "a"}\n{"id": 2, "name": "b"}\n{"id": "three", "name": "c"}\n',
    );
  });
  afterAll(() => s.close());

  const bad = Array.from({ length: ROWS }, (_, i) => i).filter(isBad);

  it.each([
    ['JSONEachRow', 'rows.ndjson', 'json_rows'],
    ['CSVWithNames', 'rows.csv', 'csv_rows'],
  ])('%s with one row in a hundred malformed', async (format, file, table) => {
    const id = await createPipe(s, pipe(table, `file:///bad/${file}`, format));
    const status = await waitForState(s, id, 'Completed');
    expect(status).toMatchObject({ rowsWritten: ROWS - bad.length, badRecords: bad.length, filesDone: 1 });
    expect(await sql(s, `SELECT count() AS n, sum(id) AS ids FROM bad.${table}`)).toEqual([
      {
        n: ROWS - bad.length,
        ids: Array.from({ length: ROWS }, (_, i) => i)
          .filter((i) => !isBad(i))
          .reduce((a, b) => a + b, 0),
      },
    ]);
    const errors = await sql(
      s,
      `SELECT pipe_id, source, row, error, raw FROM bad.${table}_pipes_error ORDER BY row`,
    );
    expect(errors).toHaveLength(bad.length);
    expect(errors.map((e) => e.row)).toEqual(bad.map((i) => i + 1));
    for (const [k, error] of errors.entries()) {
      expect(error.pipe_id).toBe(id);
      expect(error.source).toBe(`bad/${file}`);
      expect(String(error.raw)).toContain(String(bad[k]));
      expect(String(error.error).length).toBeGreaterThan(5);
    }
  });

  it('a file the engine cannot read at all is set aside with its reason, and the pipe goes on', async () => {
    const id = await createPipe(s, pipe('parquet_rows', 'file:///bad/*.parquet', 'Parquet'));
    const status = await waitForState(s, id, 'Completed');
    expect(status).toMatchObject({ rowsWritten: 0, badRecords: 1, filesDone: 1 });
    const [error] = await sql(s, 'SELECT source, row, error FROM bad.parquet_rows_pipes_error');
    expect(error).toMatchObject({ source: 'bad/corrupt.parquet', row: 0 });
    expect(String(error?.error)).toMatch(/parquet|Parquet|magic/);
  });

  it('validateSamples refuses a pipe whose first records do not parse, naming file, record and reason', async () => {
    const body = pipe('sampled', 'file:///samples/*.ndjson', 'JSONEachRow');
    const withSamples = { ...body, source: { ...body.source, validateSamples: true } };
    const refused = await s.request({ method: 'POST', url: s.pipesUrl, body: withSamples });
    expect(refused.statusCode).toBe(400);
    expect(refused.json.error).toMatch(
      /^BAD_REQUEST: source\.validateSamples: samples\/early-bad\.ndjson, record 3: Cannot parse input/,
    );
    expect(refused.json.code).toBe('SLUICE_ERR_VALIDATION');
    expect(
      (await s.request({ method: 'GET', url: s.pipesUrl })).json.result.map((p: any) => p.name),
    ).not.toContain('sampled');
    const good = pipe('sampled_ok', 'file:///bad/rows.ndjson', 'JSONEachRow');
    const accepted = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: { ...good, source: { ...good.source, validateSamples: true } },
    });
    expect(accepted.statusCode, accepted.json.error).toBe(200);
    const none = pipe('sampled_none', 'file:///samples/*.csv', 'CSV', ['c1', 'c2']);
    const empty = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: {
        ...none,
        source: {
          ...none.source,
          objectStorage: { ...none.source.objectStorage, isContinuous: true },
          validateSamples: true,
        },
      },
    });
    expect(empty.json.error).toBe(
      'BAD_REQUEST: source.validateSamples: no file matches the URL yet, so there is no sample to validate',
    );
    expect(empty.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('a file over 10 GB is set aside with an error, and the pipe goes on', async () => {
    const dir = join(s.dataDir, 'files/huge');
    await mkdir(dir, { recursive: true });
    // A sparse file: 11 GB to a listing, no disk used.
    const handle = await open(join(dir, 'a-huge.ndjson'), 'w');
    await handle.truncate(11 * 1024 ** 3);
    await handle.close();
    await writeFile(join(dir, 'b-small.ndjson'), '{"id": 1, "name": "small"}\n');
    const id = await createPipe(s, pipe('huge_rows', 'file:///huge/*.ndjson', 'JSONEachRow'));
    expect(await waitForState(s, id, 'Completed')).toMatchObject({
      filesDone: 2,
      rowsWritten: 1,
      badRecords: 1,
    });
    expect(await sql(s, 'SELECT source, error FROM bad.huge_rows_pipes_error')).toEqual([
      { source: 'huge/a-huge.ndjson', error: 'files over 10 GB are not supported yet' },
    ]);
  });
});
