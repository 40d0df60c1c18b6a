import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles } from '../src/pipes/sources/object-storage/listing.js';
import { resolveLocation } from '../src/pipes/sources/object-storage/location.js';
import { FIXTURE_ID_SUM, FIXTURE_ROWS, FixtureWriter } from './support/fixtures.js';
import { createPipe, sql, waitForState } from './support/runtime.js';
import { type RunningS3, S3_KEY, startS3 } from './support/s3.js';
import { startSluice, type TestSluice } from './support/sluice.js';

const COLUMNS = [
  { name: 'id', type: 'UInt64' },
  { name: 'name', type: 'String' },
  { name: 'amount', type: 'Float64' },
];

function s3Pipe(
  table: string,
  url: string,
  source: Record<string, unknown>,
  fields = ['id', 'name', 'amount'],
) {
  return {
    name: table,
    source: {
      objectStorage: { type: 's3', url, authentication: 'IAM_USER', accessKey: S3_KEY, ...source },
    },
    destination: {
      database: 's3',
      table,
      tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
      columns: COLUMNS,
    },
    fieldMappings: fields.map((field, i) => ({ sourceField: field, destinationField: COLUMNS[i]?.name })),
  };
}

describe('object-storage pipes from S3 (s3rver)', () => {
  let s: TestSluice;
  let s3: RunningS3;
  let fixtures: FixtureWriter;
  beforeAll(async () => {
    [s, s3, fixtures] = await Promise.all([
      startSluice({ runtime: true }),
      startS3(['data']),
      FixtureWriter.open(),
    ]);
  });
  afterAll(async () => {
    await Promise.all([s?.close(), s3?.stop(), fixtures?.close()]);
  });

  const formats: [string, string, string, Record<string, unknown>, string[]?][] = [
    ['JSONEachRow', 'f.ndjson', 'JSONEachRow', {}],
    ['CSV (fields c1, c2, ... by position)', 'f.csv', 'CSV', {}, ['c1', 'c2', 'c3']],
    ['CSVWithNames with a ; delimiter', 'f_names.csv', 'CSVWithNames', { delimiter: ';' }],
    ['TabSeparated', 'f.tsv', 'TabSeparated', {}, ['c1', 'c2', 'c3']],
    ['TabSeparatedWithNames', 'f_names.tsv', 'TabSeparatedWithNames', {}],
    ['Parquet', 'f.parquet', 'Parquet', {}],
    ['Avro', 'f.avro', 'Avro', {}],
  ];
  it.each(formats)('reads %s', async (_what, file, format, source, fields) => {
    const settings: Record<string, string> = source.delimiter
      ? { format_csv_delimiter: String(source.delimiter) }
      : {};
    await s3.put('data', `formats/${file}`, await fixtures.write(file, format, { settings }));
    const table = `fmt_${file.replace(/\W/g, '_')}`;
    const id = await createPipe(
      s,
      s3Pipe(table, `${s3.endpoint}/data/formats/${file}`, { format, ...source }, fields),
    );
    await waitForState(s, id, 'Completed');
    const rows = await sql(
      s,
      `SELECT count() AS n, sum(id) AS ids, max(amount) AS top, any(name) LIKE 'name %' AS named FROM s3.${table}`,
    );
    expect(rows).toEqual([{ n: FIXTURE_ROWS, ids: FIXTURE_ID_SUM, top: (FIXTURE_ROWS - 1) * 0.5, named: 1 }]);
  });

  const compressions: [string, string, string][] = [
    ['gzip, found from the name (auto)', 'c.ndjson.gz', 'auto'],
    ['gzip declared', 'c.gzip', 'gzip'],
    ['zstd', 'c.ndjson.zst', 'zstd'],
    ['brotli', 'c.ndjson.br', 'br'],
    ['xz', 'c.ndjson.xz', 'xz'],
  ];
  it.each(compressions)('decompresses %s', async (_what, file, compression) => {
    const written = compression === 'auto' ? 'gzip' : compression;
    await s3.put(
      'data',
      `compressed/${file}`,
      await fixtures.write(file, 'JSONEachRow', { compression: written }),
    );
    const table = `cmp_${file.replace(/\W/g, '_')}`;
    const source = { format: 'JSONEachRow', ...(compression === 'auto' ? {} : { compression }) };
    const id = await createPipe(s, s3Pipe(table, `${s3.endpoint}/data/compressed/${file}`, source));
    await waitForState(s, id, 'Completed');
    expect(await sql(s, `SELECT count() AS n, sum(id) AS ids FROM s3.${table}`)).toEqual([
      { n: FIXTURE_ROWS, ids: FIXTURE_ID_SUM },
    ]);
  });

  it('globs *, ? and ** across nested prefixes, in lexical key order', async () => {
    const keys = [
      'logs/2026/01/a.ndjson',
      'logs/2026/02/b.ndjson',
      'logs/2026/02/c.json',
      'logs/x/2026/d1.ndjson',
      'logs/e.ndjson',
    ];
    for (const [i, key] of keys.entries()) {
      await s3.put(
        'data',
        key,
        await fixtures.write(`g${i}.ndjson`, 'JSONEachRow', { rows: 10, from: i * 10 }),
      );
    }
    const location = resolveLocation(`${s3.endpoint}/data/logs/**/*.ndjson`, {
      localFilesDir: '/none',
      hasKeys: true,
    });
    const all = await listFiles(location, { limit: 100, credentials: S3_KEY });
    expect(all.map((f) => f.key)).toEqual([
      'logs/2026/01/a.ndjson',
      'logs/2026/02/b.ndjson',
      'logs/e.ndjson',
      'logs/x/2026/d1.ndjson',
    ]);
    const star = resolveLocation(`${s3.endpoint}/data/logs/2026/*/?.ndjson`, {
      localFilesDir: '/none',
      hasKeys: true,
    });
    expect((await listFiles(star, { limit: 100, credentials: S3_KEY })).map((f) => f.key)).toEqual([
      'logs/2026/01/a.ndjson',
      'logs/2026/02/b.ndjson',
    ]);
    // `**` inside a segment matches across `/`, as the engine and S3 tools read it.
    const inside = resolveLocation(`${s3.endpoint}/data/logs/**.ndjson`, {
      localFilesDir: '/none',
      hasKeys: true,
    });
    expect((await listFiles(inside, { limit: 100, credentials: S3_KEY })).map((f) => f.key)).toEqual([
      'logs/2026/01/a.ndjson',
      'logs/2026/02/b.ndjson',
      'logs/e.ndjson',
      'logs/x/2026/d1.ndjson',
    ]);
    const id = await createPipe(
      s,
      s3Pipe('globbed', `${s3.endpoint}/data/logs/**/*.ndjson`, { format: 'JSONEachRow' }),
    );
    expect(await waitForState(s, id, 'Completed')).toMatchObject({ filesDone: 4, rowsWritten: 40 });
  });

  it('pages through listings longer than one page', async () => {
    for (let i = 0; i < 25; i += 1)
      await s3.put('data', `paged/${String(i).padStart(3, '0')}.ndjson`, '{"id": 1}\n');
    const location = resolveLocation(`${s3.endpoint}/data/paged/*.ndjson`, {
      localFilesDir: '/none',
      hasKeys: true,
    });
    const files = await listFiles(location, { limit: 100, credentials: S3_KEY, pageSize: 4 });
    expect(files).toHaveLength(25);
    expect(files.map((f) => f.key)).toEqual([...files.map((f) => f.key)].sort());
    const after = await listFiles(location, {
      limit: 100,
      credentials: S3_KEY,
      pageSize: 4,
      startAfter: 'paged/020.ndjson',
    });
    expect(after.map((f) => f.key)).toEqual([
      'paged/021.ndjson',
      'paged/022.ndjson',
      'paged/023.ndjson',
      'paged/024.ndjson',
    ]);
  });
});
