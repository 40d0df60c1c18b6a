import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_ROWS, FixtureWriter } from './support/fixtures.js';
import { createPipe, sql, statusOf, waitForState } from './support/runtime.js';
import { type RunningS3, S3_KEY, startS3 } from './support/s3.js';
import { basic, startSluice, type TestSluice } from './support/sluice.js';
import { waitFor } from './support/wait.js';

describe('object-storage pipes: tables, mappings, create checks, lifecycle, queries', () => {
  let s: TestSluice;
  let s3: RunningS3;
  let fixtures: FixtureWriter;
  let http: Server;
  let httpUrl: string;
  beforeAll(async () => {
    [s, s3, fixtures] = await Promise.all([
      startSluice({ runtime: true }),
      startS3(['data', 'empty']),
      FixtureWriter.open(),
    ]);
    const body = await fixtures.write('served.csv', 'CSVWithNames');
    http = createServer((request, response) => {
      if (request.url === '/moved.csv')
        return response.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
      if (request.url !== '/exports/served.csv') return response.writeHead(404).end();
      response.writeHead(200, { 'content-length': body.length, 'content-type': 'text/csv' });
      response.end(request.method === 'HEAD' ? undefined : body);
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const address = http.address();
    httpUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    for (let i = 0; i < 4; i += 1) {
      await s3.put(
        'data',
        `orders/part-${i}.ndjson`,
        await fixtures.write(`o${i}.ndjson`, 'JSONEachRow', { rows: 250, from: i * 250 }),
      );
    }
  });
  afterAll(async () => {
    http?.close();
    await Promise.all([s?.close(), s3?.stop(), fixtures?.close()]);
  });

  const ordersSource = (extra: Record<string, unknown> = {}) => ({
    objectStorage: {
      format: 'JSONEachRow',
      url: `${s3.endpoint}/data/orders/*.ndjson`,
      authentication: 'IAM_USER',
      accessKey: S3_KEY,
      ...extra,
    },
  });

  it('maps renamed fields and virtual columns, into a ReplacingMergeTree', async () => {
    const id = await createPipe(s, {
      name: 'replacing',
      source: ordersSource(),
      destination: {
        database: 'shop',
        table: 'orders_latest',
        tableDefinition: {
          engine: { type: 'ReplacingMergeTree', versionColumnId: 'version' },
          sortingKey: ['bucket'],
        },
        columns: [
          { name: 'bucket', type: 'UInt64' },
          { name: 'version', type: 'Float64' },
          { name: 'label', type: 'String' },
          { name: 'path', type: 'String' },
          { name: 'size', type: 'UInt64' },
        ],
      },
      fieldMappings: [
        { sourceField: 'id', destinationField: 'bucket' },
        { sourceField: 'amount', destinationField: 'version' },
        { sourceField: 'name', destinationField: 'label' },
        { sourceField: '_path', destinationField: 'path' },
        { sourceField: '_size', destinationField: 'size' },
      ],
    });
    await waitForState(s, id, 'Completed');
    const rows = await sql(
      s,
      'SELECT count() AS n, uniqExact(path) AS paths, min(size) > 0 AS sized FROM shop.orders_latest FINAL',
    );
    expect(rows).toEqual([{ n: FIXTURE_ROWS, paths: 4, sized: 1 }]);
    expect((await sql(s, 'SELECT path FROM shop.orders_latest WHERE bucket = 0'))[0]?.path).toBe(
      'data/orders/part-0.ndjson',
    );
  });

  it('sums into a SummingMergeTree', async () => {
    const id = await createPipe(s, {
      name: 'summing',
      source: ordersSource(),
      destination: {
        database: 'shop',
        table: 'totals',
        tableDefinition: {
          engine: { type: 'SummingMergeTree', columnIds: ['amount'] },
          sortingKey: ['file'],
        },
        columns: [
          { name: 'file', type: 'String' },
          { name: 'amount', type: 'Float64' },
        ],
      },
      fieldMappings: [
        { sourceField: '_file', destinationField: 'file' },
        { sourceField: 'amount', destinationField: 'amount' },
      ],
    });
    await waitForState(s, id, 'Completed');
    await sql(s, 'OPTIMIZE TABLE shop.totals FINAL');
    const rows = await sql(s, 'SELECT count() AS files, sum(amount) AS total FROM shop.totals');
    expect(rows).toEqual([{ files: 4, total: (FIXTURE_ROWS * (FIXTURE_ROWS - 1)) / 2 / 2 }]);
  });

  it('writes into an existing table with managedTable: false, and refuses one that is missing or lacks a column', async () => {
    await sql(s, 'CREATE DATABASE IF NOT EXISTS mine');
    await sql(
      s,
      "CREATE TABLE mine.orders (id UInt64, name String, extra String DEFAULT 'x') ENGINE = MergeTree ORDER BY id",
    );
    const body = (table: string, columns = ['id', 'name']) => ({
      name: `unmanaged ${table}`,
      source: ordersSource(),
      destination: {
        database: 'mine',
        table,
        managedTable: false,
        columns: columns.map((name) => ({ name, type: 'String' })),
      },
    });
    const id = await createPipe(s, body('orders'));
    await waitForState(s, id, 'Completed');
    expect(await sql(s, "SELECT count() AS n, countIf(extra = 'x') AS defaults FROM mine.orders")).toEqual([
      { n: FIXTURE_ROWS, defaults: FIXTURE_ROWS },
    ]);
    const missing = await s.request({ method: 'POST', url: s.pipesUrl, body: body('nope') });
    expect(missing.statusCode).toBe(400);
    expect(missing.json.error).toContain('destination.table: mine.nope does not exist');
    expect(missing.json.code).toBe('SLUICE_ERR_VALIDATION');
    const column = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: body('orders', ['id', 'missing']),
    });
    expect(column.statusCode).toBe(400);
    // No mappings were sent: the problem names the column the user wrote.
    expect(column.json.error).toContain('destination.columns[1].name: mine.orders has no column "missing"');
    expect(column.json.code).toBe('SLUICE_ERR_VALIDATION');
    const taken = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: {
        ...body('orders'),
        destination: {
          ...body('orders').destination,
          managedTable: true,
          tableDefinition: { engine: { type: 'MergeTree' } },
        },
      },
    });
    expect(taken.statusCode).toBe(400);
    expect(taken.json.error).toContain('mine.orders already exists and holds rows');
    expect(taken.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('a destination that changed shape gets fresh staging tables, and the pipe goes on', async () => {
    await sql(s, 'CREATE DATABASE IF NOT EXISTS mine');
    await sql(s, 'CREATE TABLE mine.reshaped (id UInt64) ENGINE = MergeTree ORDER BY id');
    for (let i = 0; i < 4; i += 1) {
      await s3.put(
        'data',
        `reshape/a-${i}.ndjson`,
        await fixtures.write(`r${i}.ndjson`, 'JSONEachRow', { rows: 5, from: i * 5 }),
      );
    }
    const id = await createPipe(s, {
      name: 'reshaped',
      source: ordersSource({ isContinuous: true, url: `${s3.endpoint}/data/reshape/*.ndjson` }),
      destination: {
        database: 'mine',
        table: 'reshaped',
        managedTable: false,
        columns: [{ name: 'id', type: 'UInt64' }],
      },
      settings: { object_storage_polling_interval_ms: 100 },
    });
    await waitFor('the first files', async () => (await statusOf(s, id)).filesDone >= 4);
    await sql(s, "ALTER TABLE mine.reshaped ADD COLUMN note String DEFAULT 'later'");
    await s3.put(
      'data',
      'reshape/b-0.ndjson',
      await fixtures.write('r8.ndjson', 'JSONEachRow', { rows: 3, from: 8000 }),
    );
    await waitFor('the file after the change', async () => (await statusOf(s, id)).filesDone >= 5);
    expect(
      await sql(s, "SELECT count() AS n FROM mine.reshaped WHERE id >= 8000 AND note = 'later'"),
    ).toEqual([{ n: 3 }]);
    expect((await statusOf(s, id)).state).toBe('Running');
    await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${id}` });
  });

  it('refuses at create a location it cannot list: unknown host, denied key, missing bucket', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ url: 'http://no-such-host.invalid/b/*.ndjson' }, 'the host is unknown'],
      [{ accessKey: { accessKeyId: 'NOBODY', secretKey: 'wrong' } }, 'access denied'],
      [{ url: `${s3.endpoint}/missing-bucket/*.ndjson` }, 'the bucket does not exist'],
      [
        { url: `${httpUrl}/moved.csv`, authentication: undefined, accessKey: undefined },
        'redirects (302 to http://169.254.169.254/latest/meta-data/); Sluice follows no redirect',
      ],
      [{ type: 'azureblobstorage' }, 'cannot list or read the files'],
      [
        { queueUrl: 'https://sqs.eu-west-1.amazonaws.com/1/q', isContinuous: true },
        'queueUrl (event notifications) is not supported yet',
      ],
    ];
    const before = (await s.request({ method: 'GET', url: s.pipesUrl })).json.result.length;
    for (const [change, message] of cases) {
      const source = ordersSource(change);
      if (change.type === 'azureblobstorage') {
        Object.assign(source.objectStorage, {
          url: undefined,
          path: 'x/*.csv',
          azureContainerName: 'c',
          authentication: 'CONNECTION_STRING',
          connectionString: 'UseDevelopmentStorage=true',
          accessKey: undefined,
        });
      }
      const response = await s.request({
        method: 'POST',
        url: s.pipesUrl,
        body: {
          name: 'bad',
          source: JSON.parse(JSON.stringify(source)),
          destination: {
            table: 'never',
            tableDefinition: { engine: { type: 'MergeTree' } },
            columns: [{ name: 'id', type: 'UInt64' }],
          },
        },
      });
      expect(response.statusCode, message).toBe(400);
      expect(response.json.error, response.json.error).toContain(message);
      expect(response.json.code, message).toBe('SLUICE_ERR_VALIDATION');
    }
    expect((await s.request({ method: 'GET', url: s.pipesUrl })).json.result.length).toBe(before);
  });

  it('reads one public file from any http(s) server', async () => {
    const id = await createPipe(s, {
      name: 'http',
      source: { objectStorage: { format: 'CSVWithNames', url: `${httpUrl}/exports/served.csv` } },
      destination: {
        table: 'served',
        tableDefinition: { engine: { type: 'MergeTree' } },
        columns: [
          { name: 'id', type: 'UInt64' },
          { name: 'name', type: 'String' },
        ],
      },
    });
    await waitForState(s, id, 'Completed');
    expect(await sql(s, 'SELECT count() AS n FROM default.served')).toEqual([{ n: FIXTURE_ROWS }]);
  });

  it('stop keeps the cursor and start resumes after it; delete stops the pipe and removes it', async () => {
    const id = await createPipe(s, {
      name: 'resumable',
      source: ordersSource({ isContinuous: true }),
      destination: {
        database: 'shop',
        table: 'resumable',
        tableDefinition: { engine: { type: 'MergeTree' } },
        columns: [{ name: 'id', type: 'UInt64' }],
      },
      settings: { object_storage_polling_interval_ms: 100 },
    });
    await waitFor('the first files', async () => (await statusOf(s, id)).filesDone === 4);
    const url = `${s.pipesUrl}/${id}/state`;
    expect((await s.request({ method: 'PATCH', url, body: { command: 'stop' } })).json.result.state).toBe(
      'Stopped',
    );
    await s3.put(
      'data',
      'orders/part-9.ndjson',
      await fixtures.write('o9.ndjson', 'JSONEachRow', { rows: 5, from: 5000 }),
    );
    // A pipe that runs, made after the later file was put, lists it and loads all five files: the
    // stopped pipe, had it still polled (every 100 ms), would have loaded the one it lacks by then.
    const witness = await createPipe(s, {
      name: 'resumable witness',
      source: ordersSource(),
      destination: {
        database: 'shop',
        table: 'resumable_witness',
        tableDefinition: { engine: { type: 'MergeTree' } },
        columns: [{ name: 'id', type: 'UInt64' }],
      },
    });
    expect((await waitForState(s, witness, 'Completed')).filesDone).toBe(5);
    expect((await statusOf(s, id)).filesDone).toBe(4);
    expect((await s.request({ method: 'PATCH', url, body: { command: 'start' } })).statusCode).toBe(200);
    await waitFor('the later file', async () => (await statusOf(s, id)).filesDone === 5);
    expect(await sql(s, 'SELECT count() AS n FROM shop.resumable')).toEqual([{ n: FIXTURE_ROWS + 5 }]);
    const deleted = await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${id}` });
    expect(deleted.statusCode).toBe(200);
    expect((await s.request({ method: 'GET', url: `${s.pipesUrl}/${id}/status` })).statusCode).toBe(404);
    expect(
      await sql(
        s,
        "SELECT count() AS n FROM system.tables WHERE database = '_sluice_staging' AND name LIKE '%" +
          id.replace(/-/g, '') +
          "%'",
      ),
    ).toEqual([{ n: 0 }]);
  });

  it('delete during ingestion waits for the batch in flight, which lands whole; nothing lands after', async () => {
    await s3.put(
      'data',
      'big/rows.ndjson',
      await fixtures.write('big.ndjson', 'JSONEachRow', { rows: 2_000_000 }),
    );
    const id = await createPipe(s, {
      name: 'deleted mid-way',
      source: ordersSource({ url: `${s3.endpoint}/data/big/*.ndjson` }),
      destination: {
        database: 'shop',
        table: 'deleted',
        tableDefinition: { engine: { type: 'MergeTree' } },
        columns: [{ name: 'id', type: 'UInt64' }],
      },
    });
    // The file is claimed (a batch in flight) before the delete: the delete waits for that batch,
    // which lands whole, and nothing is written after the delete answers.
    await waitFor('the batch to be claimed', async () => {
      const status = await statusOf(s, id);
      return status.filesPending + status.filesDone === 1 ? true : undefined;
    });
    expect((await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${id}` })).statusCode).toBe(200);
    expect(await sql(s, 'SELECT count() AS n FROM shop.deleted')).toEqual([{ n: 2_000_000 }]);
    // A pipe made now reads the same file to the end and lands it: a worker of the deleted pipe
    // still running, or started again, would have landed its batch of that file by then too.
    const witness = await createPipe(s, {
      name: 'deleted witness',
      source: ordersSource({ url: `${s3.endpoint}/data/big/*.ndjson` }),
      destination: {
        database: 'shop',
        table: 'deleted_witness',
        tableDefinition: { engine: { type: 'MergeTree' } },
        columns: [{ name: 'id', type: 'UInt64' }],
      },
    });
    await waitForState(s, witness, 'Completed', 120_000);
    expect(await sql(s, 'SELECT count() AS n FROM shop.deleted_witness')).toEqual([{ n: 2_000_000 }]);
    expect(await sql(s, 'SELECT count() AS n FROM shop.deleted')).toEqual([{ n: 2_000_000 }]);
    const stages = await sql(
      s,
      `SELECT count() AS n FROM system.tables WHERE database = '_sluice_staging' AND name LIKE '%${id.replace(/-/g, '')}%'`,
    );
    expect(stages).toEqual([{ n: 0 }]);
    expect((await s.request({ method: 'GET', url: `${s.pipesUrl}/${id}` })).statusCode).toBe(404);
  }, 180_000);

  it('a managed table keeps every insert of a user, as a table made by hand does: equal blocks are two', async () => {
    // shop.totals sums amounts by file: whatever it merged, the sum counts every insert.
    const insert = "INSERT INTO shop.totals (file, amount) VALUES ('x', 1), ('x', 2)";
    await sql(s, insert);
    await sql(s, insert);
    expect(await sql(s, "SELECT sum(amount) AS total FROM shop.totals WHERE file = 'x'")).toEqual([
      { total: 6 },
    ]);
    const [made] = await sql(
      s,
      "SELECT engine_full FROM system.tables WHERE database = 'shop' AND name = 'totals'",
    );
    expect(made?.engine_full).not.toMatch(/deduplication/);
  });

  it('query: admin keys may write, other keys only read; engine errors are 400s', async () => {
    const key = await s.request({
      method: 'POST',
      url: `/v1/organizations/${s.organizationId}/keys`,
      body: { role: 'developer' },
    });
    const developer = basic(key.json.result.id, key.json.result.secret);
    const url = `/v1/organizations/${s.organizationId}/services/${s.serviceId}/query`;
    const read = await s.request({
      method: 'POST',
      url,
      body: { sql: "SELECT 1 AS one, 'a' AS letter" },
      auth: developer,
    });
    expect(read.json.result).toEqual({
      columns: [
        { name: 'one', type: 'UInt8' },
        { name: 'letter', type: 'String' },
      ],
      rows: [{ one: 1, letter: 'a' }],
    });
    const write = await s.request({
      method: 'POST',
      url,
      body: { sql: 'CREATE DATABASE x' },
      auth: developer,
    });
    expect(write.statusCode).toBe(400);
    expect(write.json.code).toBe('SLUICE_ERR_SQL_REFUSED');
    const admin = await s.request({ method: 'POST', url, body: { sql: 'CREATE DATABASE IF NOT EXISTS x' } });
    expect(admin.statusCode).toBe(200);
    const bad = await s.request({ method: 'POST', url, body: { sql: 'SELEC 1' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json.code).toBe('SLUICE_ERR_SQL_INVALID');
    const formatted = await s.request({ method: 'POST', url, body: { sql: 'SELECT 1 FORMAT CSV' } });
    expect(formatted.statusCode).toBe(400);
    expect(formatted.json.error).toContain('leave the FORMAT clause out');
    expect(formatted.json.code).toBe('SLUICE_ERR_ENGINE_RESULT_FORMAT');
    const values = await s.request({ method: 'POST', url, body: { sql: 'INSERT INTO x.t VALUES (1)' } });
    expect(values.json.error).toContain('x.t'); // the engine's own message: no such table, not a syntax error
    for (const [sql, message, auth] of [
      ["SELECT * FROM file('/etc/passwd', 'RawBLOB')", 'may not reach files of the host', s.admin],
      ["SELECT * FROM url('http://169.254.169.254/', 'RawBLOB')", 'the network', s.admin],
      ['SET max_threads = 1', 'this key may only read', developer],
    ]) {
      const refused = await s.request({ method: 'POST', url, body: { sql }, auth });
      expect(refused.statusCode, sql).toBe(400);
      expect(refused.json.error).toContain(message);
      expect(refused.json.code, sql).toBe('SLUICE_ERR_SQL_REFUSED');
    }
    const sneaky = await s.request({
      method: 'POST',
      url,
      body: { sql: 'CREATE DATABASE sneaky --' },
      auth: developer,
    });
    expect(sneaky.json.code).toBe('SLUICE_ERR_SQL_REFUSED');
    const empty = await s.request({ method: 'POST', url, body: {} });
    expect(empty.json.error).toBe('BAD_REQUEST: sql: Required: give one SQL statement as a string');
    expect(empty.json.code).toBe('SLUICE_ERR_SQL_INVALID');
  });
});

describe('object-storage pipes and the network Sluice runs in', () => {
  it('refuse private, loopback and link-local sources unless the operator allows them', async () => {
    const s = await startSluice({ runtime: true, env: { SLUICE_ALLOW_PRIVATE_SOURCES: 'false' } });
    try {
      for (const url of [
        'http://127.0.0.1:9/data.csv',
        'http://169.254.169.254/latest/meta-data/x',
        'http://10.0.0.1:9000/bucket/*.csv',
      ]) {
        const response = await s.request({
          method: 'POST',
          url: s.pipesUrl,
          body: {
            name: 'inside',
            source: { objectStorage: { format: 'CSVWithNames', url } },
            destination: {
              table: 'inside',
              tableDefinition: { engine: { type: 'MergeTree' } },
              columns: [{ name: 'a', type: 'String' }],
            },
          },
        });
        expect(response.statusCode, url).toBe(400);
        expect(response.json.error).toContain(
          'is a private, loopback or link-local address; an operator may allow those with SLUICE_ALLOW_PRIVATE_SOURCES=true',
        );
        expect(response.json.code, url).toBe('SLUICE_ERR_VALIDATION');
      }
    } finally {
      await s.close();
    }
  });
});
