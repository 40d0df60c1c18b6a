import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expressionProblem, typeProblem } from '../../src/engine/index.js';
import { oneTileDashboard } from '../support/dashboards.js';
import { objectStoragePipe } from '../support/pipes.js';
import { sql } from '../support/runtime.js';
import { BOOTSTRAP_KEY_ID, BOOTSTRAP_TOKEN, basic, startSluice, type TestSluice } from '../support/sluice.js';
import { startListener } from './support.js';

/**
 * Injection through what is stored and run later (README, "Security"): pipe column types and table
 * expressions, a source's timestamp expression, a tile's filter, group and value. Each is read by
 * the engine as exactly one type or expression before it is stored; a team token and an admin key
 * try to smuggle statements, subqueries and host files through them.
 */
describe('security: definitions are parsed by the engine, not scanned', () => {
  let s: TestSluice;
  let listener: Awaited<ReturnType<typeof startListener>>;
  let sourceId: string;
  const bearer = `Bearer ${BOOTSTRAP_TOKEN}`;
  const v2 = (method: 'POST' | 'PUT', url: string, body: unknown) =>
    s.request({ method, url: `/api/v2${url}`, body, auth: bearer });

  beforeAll(async () => {
    s = await startSluice({ runtime: true });
    listener = await startListener();
    await sql(s, 'CREATE DATABASE IF NOT EXISTS app');
    await sql(
      s,
      "CREATE TABLE app.requests (ts DateTime('UTC'), host String) ENGINE = MergeTree ORDER BY ts",
    );
    await sql(s, 'CREATE TABLE app.keep (v String) ENGINE = MergeTree ORDER BY v');
    const source = await v2('POST', '/sources', {
      name: 'requests',
      kind: 'log',
      serviceId: s.serviceId,
      from: { databaseName: 'app', tableName: 'requests' },
      timestampValueExpression: 'ts',
    });
    expect(source.statusCode).toBe(200);
    sourceId = source.json.data.id;
  });
  afterAll(async () => {
    await listener?.close();
    await s?.close();
  });

  const keepSurvives = async () =>
    expect(await sql(s, 'EXISTS TABLE app.keep'), 'app.keep was dropped').toEqual([{ result: 1 }]);

  const INJECTIONS = [
    '1; DROP TABLE app.keep',
    '1); DROP TABLE app.keep; SELECT (1',
    "$$'$$); DROP TABLE app.keep; --",
    '1 -- \n; DROP TABLE app.keep',
    '1 /* /* */ */; DROP TABLE app.keep',
    '1 SETTINGS readonly = 0',
    '1 FROM app.keep',
    '1 UNION ALL SELECT 1',
    '1, 2',
    "1 INTO OUTFILE '/tmp/x'",
    "host IN (SELECT * FROM file('/etc/passwd', 'RawBLOB'))",
    "(SELECT count() FROM url('http://127.0.0.1:{PORT}/', 'RawBLOB'))",
  ];
  const fill = (text: string) => text.replaceAll('{PORT}', String(listener.port));

  it('a source timestamp expression must be one expression', async () => {
    for (const injection of INJECTIONS) {
      const response = await v2('POST', '/sources', {
        name: 'bad',
        kind: 'log',
        serviceId: s.serviceId,
        from: { databaseName: 'app', tableName: 'requests' },
        timestampValueExpression: fill(injection),
      });
      expect(response.statusCode, injection).toBe(400);
      expect(response.body).toContain('timestampValueExpression');
    }
    await keepSurvives();
    expect(listener.connections()).toBe(0);
  });

  it("a tile's where, groupBy and valueExpression must each be one expression", async () => {
    const tile = (config: Record<string, unknown>, select: Record<string, unknown> = {}) =>
      oneTileDashboard(sourceId, select, config);
    for (const injection of INJECTIONS) {
      const text = fill(injection);
      for (const [body, field] of [
        [tile({}, { where: text, whereLanguage: 'sql' }), 'where'],
        [tile({ groupBy: text }), 'groupBy'],
        [tile({}, { aggFn: 'sum', valueExpression: text }), 'valueExpression'],
      ] as const) {
        const response = await v2('POST', '/dashboards', body);
        expect(response.statusCode, `${field}: ${injection}`).toBe(400);
        expect(response.body).toContain(field);
      }
    }
    const fine = await v2('POST', '/dashboards', tile({ groupBy: 'lower(host)' }, { where: "host != ''" }));
    expect(fine.statusCode, fine.body).toBe(200);
    await keepSurvives();
    expect(listener.connections()).toBe(0);
  });

  it('the engine check alone refuses every injection (the text guard is only a friendlier first error)', async () => {
    const service = await s.sluice.identity.getService(s.organizationId, s.serviceId);
    const engine = s.sluice.engines.engineFor(service);
    for (const injection of INJECTIONS) {
      expect(await expressionProblem(engine, fill(injection)), injection).toBeDefined();
    }
    for (const type of [
      'String) ENGINE = Memory; DROP TABLE app.keep; --',
      "$$'$$) ENGINE=Memory; --",
      'Strin',
    ])
      expect(await typeProblem(engine, type), type).toBeDefined();
    // A comment inside one expression is still one expression; it is set on lines of its own.
    expect(await expressionProblem(engine, 'lower(host) -- by host')).toBeUndefined();
    expect(await typeProblem(engine, "DateTime64(3, 'UTC')")).toBeUndefined();
    await keepSurvives();
    expect(listener.connections()).toBe(0);
  });

  it('pipe column types and table expressions must each be one type or expression', async () => {
    const base = objectStoragePipe();
    const withColumns = (type: string, extra: Record<string, unknown> = {}) => ({
      ...base,
      destination: {
        ...base.destination,
        columns: base.destination.columns.map((c) => (c.name === 'payload' ? { ...c, type } : c)),
        tableDefinition: { ...base.destination.tableDefinition, ...extra },
      },
    });
    const attempts: [unknown, string][] = [
      [withColumns('String) ENGINE = Memory; DROP TABLE app.keep; --'), 'destination.columns[3].type'],
      [withColumns("$$'$$) ENGINE=Memory; DROP TABLE app.keep; --"), 'destination.columns[3].type'],
      [withColumns('Strin'), 'destination.columns[3].type'],
      [
        withColumns('String', { partitionBy: 'toYYYYMM(ts)) ENGINE = Memory; DROP TABLE app.keep; --' }),
        'partitionBy',
      ],
      [withColumns('String', { primaryKey: 'id, (SELECT 1)' }), 'primaryKey'],
    ];
    for (const [body, field] of attempts) {
      const response = await s.request({ method: 'POST', url: s.pipesUrl, body });
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.json.error).toContain(field);
      expect(response.json.code, JSON.stringify(body)).toBe('SLUICE_ERR_VALIDATION');
    }
    const pipes = await s.request({ method: 'GET', url: s.pipesUrl });
    expect(pipes.json.result).toEqual([]);
    await keepSurvives();
  });

  it('limits on columns, mappings, tiles and expression lengths are 400s naming the field', async () => {
    const base = objectStoragePipe();
    const columns = Array.from({ length: 20_000 }, (_, i) => ({ name: `c${i}`, type: 'String' }));
    const wide = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: { ...base, destination: { ...base.destination, columns }, fieldMappings: [] },
    });
    expect(wide.statusCode).toBe(400);
    expect(wide.json.error).toContain('destination.columns');
    expect(wide.json.code).toBe('SLUICE_ERR_VALIDATION');
    const longType = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: {
        ...base,
        destination: {
          ...base.destination,
          columns: [{ name: 'id', type: `Nullable(${'String'.repeat(1000)})` }],
        },
      },
    });
    expect(longType.statusCode).toBe(400);
    expect(longType.json.error).toContain('destination.columns[0].type');
    expect(longType.json.code).toBe('SLUICE_ERR_VALIDATION');
    const tiles = Array.from({ length: 201 }, () => ({
      name: 't',
      x: 0,
      y: 0,
      w: 1,
      h: 1,
      config: { displayType: 'number', sourceId, select: [{ aggFn: 'count' }] },
    }));
    const many = await v2('POST', '/dashboards', { name: 'big', tiles });
    expect(many.statusCode).toBe(400);
    expect(many.body).toContain('tiles');
    expect(many.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('an unknown key id takes as long to refuse as a known one with a wrong secret', async () => {
    const timeOf = async (auth: string) => {
      const started = performance.now();
      const response = await s.request({ method: 'GET', url: '/v1/organizations', auth });
      expect(response.statusCode).toBe(401);
      return performance.now() - started;
    };
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 8; i += 1) {
      known.push(await timeOf(basic(BOOTSTRAP_KEY_ID, `wrong-secret-${i}`)));
      unknown.push(await timeOf(basic(`sk_unknown_${i}`, `wrong-secret-${i}`)));
    }
    const median = (values: number[]) =>
      [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
    // Both run scrypt (about 40 ms here); without the dummy verification an unknown id took 3 ms.
    expect(median(unknown)).toBeGreaterThan(median(known) * 0.5);
  });

  it('webhook URLs in IPv6 forms that carry a private IPv4 address are refused', async () => {
    for (const host of [
      '[::ffff:127.0.0.1]',
      '[::ffff:0:7f00:1]',
      '[64:ff9b::7f00:1]',
      '[2002:7f00:1::]',
      '[::7f00:1]',
      '[64:ff9b::a9fe:a9fe]',
      '[2001:0:4136:e378:8000:63bf:80ff:fffe]',
    ]) {
      const response = await v2('POST', '/webhooks', {
        name: 'w',
        url: `http://${host}:${listener.port}/hook`,
      });
      expect(response.statusCode, host).toBe(400);
      expect(response.json.code, host).toBe('SLUICE_ERR_VALIDATION');
    }
    expect(listener.connections()).toBe(0);
  });
});
