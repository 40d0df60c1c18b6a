import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql as runSql } from './support/runtime.js';
import { BOOTSTRAP_TOKEN, startSluice, type TestSluice } from './support/sluice.js';

/** A request body as a client shapes it (test/fixtures/clients/), its source ids filled in. */
async function fixture(name: string, ids: Record<string, string> = {}): Promise<Record<string, any>> {
  let text = await readFile(new URL(`./fixtures/clients/${name}.json`, import.meta.url), 'utf8');
  for (const [placeholder, id] of Object.entries(ids)) text = text.replaceAll(placeholder, id);
  return JSON.parse(text);
}

const omitId = ({ id: _id, ...rest }: Record<string, unknown>) => rest;

/**
 * What clients of the alerting platform's v2 API send (issue 34, items 10 and 11), to a Sluice
 * started as a user runs it (pipe runtime and alert timer on), with the test's clock for ticks.
 */
describe('what clients of the alerting API send', () => {
  let s: TestSluice;
  let now = new Date('2026-11-22T10:00:00Z');
  let traceSource: string;
  let metricSource: string;
  let readingsSource: string;
  let webhookId: string;
  const v2 = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown) => {
    const auth = `Bearer ${BOOTSTRAP_TOKEN}`;
    return s.request({ method, url: `/api/v2${url}`, auth, ...(body === undefined ? {} : { body }) });
  };
  const ok = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown) => {
    const response = await v2(method, url, body);
    if (response.statusCode !== 200) throw new Error(`${method} ${url}: ${response.body}`);
    return response.json;
  };
  const source = async (tableName: string, timestamp: string, kind = 'log') =>
    (
      await ok('POST', '/sources', {
        name: tableName,
        kind,
        serviceId: s.serviceId,
        from: { databaseName: 'app', tableName },
        timestampValueExpression: timestamp,
      })
    ).data.id as string;
  const sql = (text: string) => runSql(s, text);

  beforeAll(async () => {
    s = await startSluice({
      runtime: true,
      clock: () => now,
      alertTimer: true,
      env: { SLUICE_ALLOW_PRIVATE_WEBHOOKS: 'true' },
    });
    await sql('CREATE DATABASE IF NOT EXISTS app');
    await sql(
      "CREATE TABLE app.otel_traces (Timestamp DateTime64(9, 'UTC'), ServiceName String, SpanName String, Duration UInt64) ENGINE = MergeTree ORDER BY Timestamp",
    );
    await sql(
      "CREATE TABLE app.readings (ts DateTime('UTC'), day Date, value Float64) ENGINE = MergeTree ORDER BY ts",
    );
    await sql(
      "CREATE TABLE app.otel_metrics_gauge (TimeUnix DateTime64(9, 'UTC'), MetricName String, Value Float64) ENGINE = MergeTree ORDER BY TimeUnix",
    );
    traceSource = await source('otel_traces', 'Timestamp', 'trace');
    metricSource = await source('otel_metrics_gauge', 'TimeUnix', 'metric');
    readingsSource = await source('readings', 'ts');
    webhookId = (await ok('POST', '/webhooks', { name: 'hook', url: 'http://127.0.0.1:9/hook' })).data.id;
  });
  afterAll(() => s?.close());

  it('dashboards of the series era: accepted, answered as series; negative thresholds, bad ids, deletes and tags as that API did', async () => {
    // The HyperDX dashboard skill of ClickStack's observability skills
    // (doneyli/clickhouse-clickstack-o11y), its Python deploy pattern: POST, then `data['id']` and
    // `len(data['tiles'])`; its deploy scripts do the same.
    const skill = await fixture('hyperdx-skill-series-dashboard', { 'SRC[trace]': traceSource });
    const created = await v2('POST', '/dashboards', skill);
    expect(created.statusCode, created.body).toBe(200);
    const board = created.json.data;
    expect(board.id).toMatch(/^[0-9a-f]{24}$/);
    expect(board.tiles).toHaveLength(1);
    // The series read back as that API translated them: the tile as sent, with `asRatio`.
    expect(omitId(board.tiles[0])).toEqual({ ...skill.tiles[0], asRatio: false });
    expect((await ok('GET', `/dashboards/${board.id}`)).data).toEqual(board);
    // Two tiles of its checkout dashboard's deploy script, as written there: their format comes back too.
    const checkout = await fixture('hyperdx-checkout-latency-tiles', { 'SRC[trace]': traceSource });
    const latency = await ok('POST', '/dashboards', checkout);
    expect(latency.data.tiles.map(omitId)).toEqual(
      checkout.tiles.map((t: object) => ({ ...t, asRatio: false })),
    );

    // The dashboard HyperDX's own external API tests send (hyperdx, v2 dashboards API, January 2026,
    // "should return responses in the expected format"): the whole answer compared.
    const format = await fixture('hyperdx-api-format-test-dashboard', { 'SRC[trace]': traceSource });
    const formatted = await v2('POST', '/dashboards', format);
    expect(formatted.statusCode, formatted.body).toBe(200);
    const [time, number] = format.tiles.map(({ seriesReturnType: _, ...tile }: any) => tile);
    expect(formatted.json).toEqual({
      data: {
        id: expect.any(String),
        name: 'Format Test Dashboard',
        tiles: [
          {
            ...time,
            asRatio: false,
            series: [{ ...time.series[0], whereLanguage: 'lucene', displayType: 'line', field: '' }],
          },
          {
            ...number,
            asRatio: false,
            series: [{ ...number.series[0], whereLanguage: 'lucene', field: '' }],
          },
        ],
        tags: ['format-test'],
      },
    });
    const formatId = formatted.json.data.id;
    expect((await ok('GET', `/dashboards/${formatId}`)).data).toEqual(formatted.json.data);
    expect((await ok('GET', '/dashboards')).data).toContainEqual(formatted.json.data);

    // A client's read-modify-write: the GET answer back as a PUT, a tag given twice; kept once.
    const update = { ...board, tags: ['my-tag', 'demo', 'my-tag'] };
    const updated = await ok('PUT', `/dashboards/${board.id}`, update);
    expect(updated.data).toEqual({ ...board, tags: ['my-tag', 'demo'] });
    // Its metric tile "Container CPU Utilization" reads a metric by name: refused, not misread.
    const cpu = {
      name: 'Container CPU Utilization',
      ...{ x: 0, y: 21, w: 12, h: 6 },
      series: [
        {
          type: 'time',
          sourceId: metricSource,
          aggFn: 'avg',
          field: 'Value',
          where: '',
          whereLanguage: 'lucene',
          groupBy: [],
          displayType: 'line',
          metricName: 'container.cpu.utilization',
          metricDataType: 'gauge',
        },
      ],
    };
    const metric = await v2('POST', '/dashboards', { ...checkout, tiles: [cpu] });
    expect(metric.json.code).toBe('SLUICE_ERR_VALIDATION');
    expect(metric.json.message).toContain(
      "tiles[0].series[0].metricName: Not supported: make a source over the metric's table",
    );
    // A problem in a series is named as the client wrote it.
    const avg = structuredClone(skill);
    avg.tiles[0].series[0].aggFn = 'avg';
    expect((await v2('POST', '/dashboards', avg)).json).toEqual({
      message: 'Body validation failed: tiles[0].series[0].field: Required for avg',
      code: 'SLUICE_ERR_VALIDATION',
    });

    // The alert body of that API's OpenAPI example (hyperdx, v2 alerts API), on the series tile; a
    // threshold below 0 is a 400 on create and on update (`z.number().min(0)`).
    const alert = {
      ...(await fixture('hyperdx-openapi-tile-alert')),
      dashboardId: formatId,
      tileId: time.id,
      channel: { type: 'webhook', webhookId },
    };
    const negative = {
      message: 'Body validation failed: threshold: Must be at least 0',
      code: 'SLUICE_ERR_VALIDATION',
    };
    expect((await v2('POST', '/alerts', { ...alert, threshold: -1 })).json).toEqual(negative);
    const kept = (await ok('POST', '/alerts', alert)).data;
    expect(kept).toMatchObject({ threshold: 100, tileId: time.id, dashboard: formatId });
    const lowered = await v2('PUT', `/alerts/${kept.id}`, { ...alert, threshold: -0.5 });
    expect([lowered.statusCode, lowered.json]).toEqual([400, negative]);

    // GET of something that is not an id is a 400 (the routes' objectIdSchema); a well-formed
    // unknown id is a 404.
    const malformed = await v2('GET', '/dashboards/not-an-id');
    expect([malformed.statusCode, malformed.json]).toEqual([
      400,
      {
        message: 'Params validation failed: id: Invalid id: expected 24 hexadecimal characters',
        code: 'SLUICE_ERR_VALIDATION',
      },
    ]);
    expect((await v2('GET', `/dashboards/${'0'.repeat(24)}`)).statusCode).toBe(404);

    // The dashboard cleanup script of those skills (doneyli/clickhouse-clickstack-o11y) takes 200
    // as deleted; deleting again, as a retried cleanup does, is 200 `{}` too (the controller's
    // findOneAndDelete).
    for (const attempt of [1, 2]) {
      const deleted = await v2('DELETE', `/dashboards/${formatId}`);
      expect([attempt, deleted.statusCode, deleted.json]).toEqual([attempt, 200, {}]);
    }
    expect((await v2('GET', `/alerts/${kept.id}`)).statusCode).toBe(404);
    expect((await v2('GET', `/dashboards/${formatId}`)).statusCode).toBe(404);
  });

  it('an alert on a Lucene range tile fires for the window open when it was created, on numbers and dates', async () => {
    const alertOn = async (where: string, threshold: number) => {
      const body = await fixture('hyperdx-config-lucene-tile', { 'SRC[readings]': readingsSource });
      body.tiles[0].config.select[0].where = where;
      const board = (await ok('POST', '/dashboards', body)).data;
      // The OpenAPI example's alert (hyperdx, v2 alerts API), per minute.
      const alert = {
        ...(await fixture('hyperdx-openapi-tile-alert')),
        dashboardId: board.id,
        tileId: board.tiles[0].id,
        interval: '1m',
        threshold,
        channel: { type: 'webhook', webhookId },
      };
      return (await ok('POST', '/alerts', alert)).data.id as string;
    };
    const historyOf = async (id: string) => (await ok('GET', `/alerts/${id}/history`)).data;
    const tickAt = async (time: string) => {
      now = new Date(time);
      await s.sluice.evaluator.tick();
    };

    // Issue 34's report: the alert made at 10:20:15, ten rows right after, five of them 35.
    now = new Date('2026-11-22T10:20:15Z');
    const reported = await alertOn('value:>30', 3);
    await sql(
      `INSERT INTO app.readings VALUES ${Array.from(
        { length: 10 },
        (_, i) => `('2026-11-22 10:20:${16 + i}', '2026-11-22', ${i % 2 === 0 ? 35 : 12})`,
      ).join(', ')}`,
    );
    await tickAt('2026-11-22T10:21:05Z');
    expect((await ok('GET', `/alerts/${reported}`)).data.state).toBe('ALERT');
    expect((await historyOf(reported))[0]).toMatchObject({
      windowStart: '2026-11-22T10:20:00.000Z',
      state: 'ALERT',
      value: 5,
      error: null,
    });

    // Ranges on a number, a date and a time: five rows in the next minute, each filter's count.
    const rows: [string, string, number][] = [
      ['10:21:10', '2026-11-20', 10],
      ['10:21:20', '2026-11-21', 20],
      ['10:21:30', '2026-11-22', 30],
      ['10:21:40', '2026-11-23', 35],
      ['10:21:50', '2026-11-24', 40],
    ];
    const ranges: [where: string, count: number][] = [
      ['value:>30', 2],
      ['value:>=30', 3],
      ['value:<30', 2],
      ['value:[20 TO 35]', 3],
      ['value:{20 TO 35}', 1],
      ['day:>2026-11-23', 1],
      ['day:>=2026-11-22', 3],
      ['day:<2026-11-21', 1],
      ['day:[2026-11-21 TO 2026-11-22]', 2],
      ['day:{2026-11-20 TO 2026-11-23}', 2],
      ['ts:>2026-11-22T10\\:21\\:40', 1],
      ['ts:>=2026-11-22T10\\:21\\:30', 3],
      ['ts:<2026-11-22T10\\:21\\:20', 1],
      ['ts:["2026-11-22 10:21:10" TO "2026-11-22 10:21:40"]', 4],
      ['ts:{"2026-11-22 10:21:10" TO "2026-11-22 10:21:40"}', 2],
    ];
    now = new Date('2026-11-22T10:21:05Z');
    const alerts: string[] = [];
    for (const [where, count] of ranges) alerts.push(await alertOn(where, count));
    await sql(
      `INSERT INTO app.readings VALUES ${rows.map(([time, day, value]) => `('2026-11-22 ${time}', '${day}', ${value})`).join(', ')}`,
    );
    await tickAt('2026-11-22T10:22:05Z');
    const seen: [string, string, unknown, unknown][] = [];
    for (const [i, [where]] of ranges.entries()) {
      const id = alerts[i] as string;
      const [last] = await historyOf(id);
      seen.push([where, (await ok('GET', `/alerts/${id}`)).data.state, last?.windowStart, last?.value]);
    }
    expect(seen).toEqual(ranges.map(([where, count]) => [where, 'ALERT', '2026-11-22T10:21:00.000Z', count]));
  });
});
