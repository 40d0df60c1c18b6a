import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles } from '../src/pipes/sources/object-storage/listing.js';
import { sourceLocation } from '../src/pipes/sources/object-storage/location.js';
import { AZURITE_KEY, type RunningAzurite, startAzurite } from './support/azurite.js';
import { FIXTURE_ID_SUM, FIXTURE_ROWS, FixtureWriter } from './support/fixtures.js';
import { createPipe, sql, waitForState } from './support/runtime.js';
import { startSluice, type TestSluice } from './support/sluice.js';

const run = promisify(execFile);

describe('object-storage pipes from Azure Blob Storage (azurite)', () => {
  let s: TestSluice;
  let azure: RunningAzurite;
  let fixtures: FixtureWriter;
  beforeAll(async () => {
    [s, azure, fixtures] = await Promise.all([
      startSluice({ runtime: true }),
      startAzurite(['events']),
      FixtureWriter.open(),
    ]);
    for (let i = 0; i < 3; i += 1) {
      await azure.put(
        'events',
        `csv/day-${i}.csv`,
        await fixtures.write(`d${i}.csv`, 'CSVWithNames', {
          rows: FIXTURE_ROWS / 4,
          from: (i * FIXTURE_ROWS) / 4,
        }),
      );
    }
    await azure.put(
      'events',
      'csv/day-3.csv.gz',
      await fixtures.write('d3.csv.gz', 'CSVWithNames', {
        rows: FIXTURE_ROWS / 4,
        from: (3 * FIXTURE_ROWS) / 4,
        compression: 'gzip',
      }),
    );
    await azure.put('events', 'other/skip.csv', 'id,name\n1,x\n');
  });
  afterAll(async () => {
    await Promise.all([s?.close(), azure?.stop(), fixtures?.close()]);
  });

  const azurePipe = (table: string, path: string, extra: Record<string, unknown> = {}) => ({
    name: table,
    source: {
      objectStorage: {
        type: 'azureblobstorage',
        format: 'CSVWithNames',
        path,
        azureContainerName: 'events',
        authentication: 'CONNECTION_STRING',
        connectionString: azure.connectionString,
        ...extra,
      },
    },
    destination: {
      database: 'azure',
      table,
      tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
      columns: [
        { name: 'id', type: 'UInt64' },
        { name: 'name', type: 'String' },
        { name: 'blob', type: 'String' },
      ],
    },
    fieldMappings: [
      { sourceField: 'id', destinationField: 'id' },
      { sourceField: 'name', destinationField: 'name' },
      { sourceField: '_file', destinationField: 'blob' },
    ],
  });

  it('ingests every blob matching the path once, compressed or not, and ends Completed', async () => {
    const id = await createPipe(s, azurePipe('days', 'csv/day-*'));
    expect(await waitForState(s, id, 'Completed')).toMatchObject({
      filesDone: 4,
      rowsWritten: FIXTURE_ROWS,
      badRecords: 0,
    });
    expect(
      await sql(s, 'SELECT count() AS n, sum(id) AS ids, uniqExact(blob) AS blobs FROM azure.days'),
    ).toEqual([{ n: FIXTURE_ROWS, ids: FIXTURE_ID_SUM, blobs: 4 }]);
    // The account key is never written to the data directory (pipes' secrets are sealed).
    const found = await run('grep', ['-rlaF', '-e', AZURITE_KEY, '--', s.dataDir]).then(
      (r) => r.stdout,
      () => '',
    );
    expect(found).toBe('');
  });

  it('lists blobs page by page in lexical order, after a start key', async () => {
    const location = sourceLocation(
      {
        type: 'azureblobstorage',
        path: 'csv/*',
        azureContainerName: 'events',
        connectionString: azure.connectionString,
      },
      '/none',
    );
    const all = await listFiles(location, { limit: 100, pageSize: 1 });
    expect(all.map((f) => f.key)).toEqual([
      'csv/day-0.csv',
      'csv/day-1.csv',
      'csv/day-2.csv',
      'csv/day-3.csv.gz',
    ]);
    const after = await listFiles(location, { limit: 100, pageSize: 2, startAfter: 'csv/day-1.csv' });
    expect(after.map((f) => f.key)).toEqual(['csv/day-2.csv', 'csv/day-3.csv.gz']);
  });

  it('refuses at create a container that does not exist or a wrong key', async () => {
    const missing = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: azurePipe('nope', 'csv/*', { azureContainerName: 'missing' }),
    });
    expect(missing.statusCode).toBe(400);
    expect(missing.json.error).toContain(
      'source.objectStorage.url: cannot list or read the files: the container does not exist',
    );
    expect(missing.json.code).toBe('SLUICE_ERR_VALIDATION');
    const wrongKey = azure.connectionString.replace(AZURITE_KEY, Buffer.alloc(64, 1).toString('base64'));
    const denied = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: azurePipe('denied', 'csv/*', { connectionString: wrongKey }),
    });
    expect(denied.statusCode).toBe(400);
    expect(denied.json.error, denied.json.error).toContain('access denied');
    expect(denied.json.code).toBe('SLUICE_ERR_VALIDATION');
    expect(denied.json.error).not.toContain(Buffer.alloc(64, 1).toString('base64'));
  });
});
