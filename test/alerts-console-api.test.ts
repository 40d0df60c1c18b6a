import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestsSource, tileAlert } from './support/dashboards.js';
import { Receiver } from './support/receiver.js';
import { sql as runSql } from './support/runtime.js';
import { BOOTSTRAP_TOKEN, startSluice, type TestSluice, teamToken } from './support/sluice.js';
import { waitFor } from './support/wait.js';

/**
 * The alerts area's additions the console draws with (README, "Alerts area"): a tile's series over
 * a time range, read with the alert evaluator's own query, and a webhook's test send through the
 * notification sender.
 */
describe('tile data and webhook test sends under /api/v2', () => {
  let s: TestSluice;
  let receiver: Receiver;
  let now = new Date('2026-11-22T10:00:00Z');
  let other = ''; // a bearer token of another team
  let sourceId = '';
  const me = `Bearer ${BOOTSTRAP_TOKEN}`;
  const call = (method: 'GET' | 'POST', url: string, body?: unknown, auth = me) =>
    s.request({ method, url: `/api/v2${url}`, auth, ...(body === undefined ? {} : { body }) });
  const ok = async (method: 'GET' | 'POST', url: string, body?: unknown) => {
    const response = await call(method, url, body);
    expect(response.statusCode, response.body).toBe(200);
    return response.json.data;
  };
  const sql = (text: string) => runSql(s, text);
  /** A dashboard of one tile over app.requests, with the given select and group-by. */
  const dashboardWith = async (select: Record<string, unknown>, groupBy?: string) =>
    ok('POST', '/dashboards', {
      name: 'console',
      tiles: [
        {
          name: 'tile',
          x: 0,
          y: 0,
          w: 6,
          h: 4,
          config: { displayType: 'line', sourceId, select: [select], ...(groupBy ? { groupBy } : {}) },
        },
      ],
    }) as Promise<{ id: string; tiles: { id: string }[] }>;
  const webhook = (path: string, extra: Record<string, unknown> = {}) =>
    ok('POST', '/webhooks', { name: path, url: `${receiver.url}/${path}`, ...extra });
  const alertOn = (dashboard: { id: string; tiles: { id: string }[] }, webhookId: string) =>
    ok('POST', '/alerts', tileAlert(dashboard, webhookId, { name: 'slow errors', threshold: 100 }));
  const tick = async (time: string) => {
    now = new Date(time);
    await s.sluice.evaluator.tick();
    await s.sluice.notifier.deliverDue();
  };
  const dataOf = (dashboard: { id: string; tiles: { id: string }[] }, query: string, auth = me) =>
    call('GET', `/dashboards/${dashboard.id}/tiles/${dashboard.tiles[0]?.id}/data?${query}`, undefined, auth);

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
    s = await startSluice({ clock: () => now, env: { SLUICE_ALLOW_PRIVATE_WEBHOOKS: 'true' } });
    await sql('CREATE DATABASE IF NOT EXISTS app');
    await sql(
      "CREATE TABLE app.requests (ts DateTime('UTC'), status UInt16, latency Float64, path String) ENGINE = MergeTree ORDER BY ts",
    );
    // 10:00-10:05: three errors (latency 40 + 50 + 60 = 150) and an OK request; 10:05-10:10: one error.
    await sql(`INSERT INTO app.requests VALUES
      ('2026-11-22 10:01:00', 500, 40, '/a'), ('2026-11-22 10:02:00', 503, 50, '/b'),
      ('2026-11-22 10:04:59', 500, 60, '/a'), ('2026-11-22 10:03:00', 200, 1000, '/a'),
      ('2026-11-22 10:07:00', 500, 7, '/b')`);
    sourceId = (await ok('POST', '/sources', requestsSource(s.serviceId))).id;
    other = `Bearer ${await teamToken(s, 'others', 'eve')}`;
  });
  afterAll(async () => {
    await s?.close();
    await receiver?.stop();
  });

  it("a tile's data is, window for window, the value an alert on the tile evaluates", async () => {
    const dashboard = await dashboardWith({
      aggFn: 'sum',
      valueExpression: 'latency',
      where: 'status:>=500',
      whereLanguage: 'lucene',
    });
    const alert = await alertOn(dashboard, (await webhook('evaluated')).id);
    await tick('2026-11-22T10:05:30Z'); // a new alert evaluates the last completed window, 10:00-10:05
    const history = await ok('GET', `/alerts/${alert.id}/history`);
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({ windowStart: '2026-11-22T10:00:00.000Z', value: 150, state: 'ALERT' });

    const response = await dataOf(
      dashboard,
      'from=2026-11-22T10:00:00Z&to=2026-11-22T10:15:00Z&granularity=5m',
    );
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json.data).toEqual({
      from: '2026-11-22T10:00:00.000Z',
      to: '2026-11-22T10:15:00.000Z',
      granularity: '5m',
      truncated: false,
      series: [
        {
          select: 0,
          label: 'sum(latency)',
          points: [
            { t: '2026-11-22T10:00:00.000Z', value: history[0].value },
            { t: '2026-11-22T10:05:00.000Z', value: 7 },
            // An empty window is 0, as the evaluator reads it.
            { t: '2026-11-22T10:10:00.000Z', value: 0 },
          ],
        },
      ],
    });
  });

  it('a grouped tile has a series per group, each equal to the history of that group', async () => {
    const dashboard = await dashboardWith(
      { aggFn: 'count', where: 'status >= 500', whereLanguage: 'sql' },
      'path',
    );
    const alert = await alertOn(dashboard, (await webhook('grouped')).id);
    await tick('2026-11-22T10:05:40Z');
    const history = (await ok('GET', `/alerts/${alert.id}/history`)) as { group: string; value: number }[];
    const data = (await dataOf(dashboard, 'from=2026-11-22T10:00:00Z&to=2026-11-22T10:05:00Z&granularity=5m'))
      .json.data as { series: { group: string; label: string; points: { value: number }[] }[] };
    const fromHistory = Object.fromEntries(history.map((row) => [row.group, row.value]));
    const fromData = Object.fromEntries(data.series.map((series) => [series.group, series.points[0]?.value]));
    expect(fromHistory).toEqual({ '/a': 2, '/b': 1 });
    expect(fromData).toEqual(fromHistory);
    // The largest group first.
    expect(data.series.map((series) => series.label)).toEqual(['count() /a', 'count() /b']);
  });

  it('a group-by of too many groups over the range is a 400 that says what to narrow, not a server holding them all', async () => {
    const dashboard = await dashboardWith({ aggFn: 'count' }, 'toString(arrayJoin(range(200000)))');
    const data = await dataOf(dashboard, 'from=2026-11-22T10:00:00Z&to=2026-11-22T10:05:00Z&granularity=5m');
    expect(data.statusCode, data.body).toBe(400);
    expect(data.json.message).toContain('a group-by of fewer groups');
    expect(data.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('chooses a granularity with at most 300 buckets, aligned to the epoch, and refuses too many buckets', async () => {
    const dashboard = await dashboardWith({ aggFn: 'count' });
    now = new Date('2026-11-22T10:07:30Z');
    const lastHour = (await dataOf(dashboard, '')).json.data;
    expect(lastHour).toMatchObject({
      granularity: '1m',
      from: '2026-11-22T09:07:00.000Z',
      to: '2026-11-22T10:08:00.000Z',
    });
    expect(lastHour.series[0].points).toHaveLength(61);
    const day = (await dataOf(dashboard, 'from=2026-11-21T10:00:00Z&to=2026-11-22T10:00:00Z')).json.data;
    expect(day.granularity).toBe('5m');
    expect(day.series[0].points).toHaveLength(288);
    const month = (await dataOf(dashboard, 'from=2026-10-23T10:00:00Z&to=2026-11-22T10:00:00Z')).json.data;
    expect(month.granularity).toBe('6h');
    // The five rows of the table are all in the month.
    expect(month.series[0].points.reduce((sum: number, p: { value: number }) => sum + p.value, 0)).toBe(5);

    const tooMany = await dataOf(
      dashboard,
      'from=2026-10-23T10:00:00Z&to=2026-11-22T10:00:00Z&granularity=1m',
    );
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.json.code).toBe('SLUICE_ERR_VALIDATION');
    expect(tooMany.json.message).toMatch(/^Query validation failed: granularity: 1m makes 43200 buckets/);
    const bad = await dataOf(dashboard, 'from=yesterday&granularity=2m');
    expect(bad.statusCode).toBe(400);
    expect(bad.json.message).toContain('from: Expected an ISO 8601 time');
    expect(bad.json.message).toContain('granularity: Expected one of 1m, 5m');
    expect(bad.json.code).toBe('SLUICE_ERR_VALIDATION');
    const backwards = await dataOf(dashboard, 'from=2026-11-22T10:00:00Z&to=2026-11-22T09:00:00Z');
    expect(backwards.statusCode).toBe(400);
    expect(backwards.json.message).toContain('to: Must be after from');
    expect(backwards.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it("another team's dashboard and an unknown tile are 404s", async () => {
    const dashboard = await dashboardWith({ aggFn: 'count' });
    const theirs = await dataOf(dashboard, '', other);
    expect(theirs.statusCode).toBe(404);
    expect(theirs.json).toEqual({ message: 'Dashboard not found', code: 'SLUICE_ERR_DASHBOARD_NOT_FOUND' });
    const noTile = await call('GET', `/dashboards/${dashboard.id}/tiles/${'f'.repeat(24)}/data`);
    expect(noTile.statusCode).toBe(404);
    expect(noTile.json).toEqual({ message: 'Tile not found', code: 'SLUICE_ERR_TILE_NOT_FOUND' });
  });

  it('a test send reaches the webhook through its template, headers and query parameters, and touches no alert', async () => {
    const hook = await webhook('tested', {
      headers: { 'X-Receiver-Secret': 'shh' },
      queryParams: { channel: 'ops' },
      body: '{"text": "{{title}}", "body": "{{body}}", "state": "{{state}}"}',
    });
    const dashboard = await dashboardWith({ aggFn: 'count' });
    const alert = await alertOn(dashboard, hook.id);
    const before = await ok('GET', `/alerts/${alert.id}`);

    const sent = await ok('POST', `/webhooks/${hook.id}/test`);
    expect(sent).toEqual({ ok: true, status: 200 });
    const got = receiver.received.filter((r) => r.path.startsWith('/tested'));
    expect(got).toHaveLength(1);
    expect(got[0]?.path).toBe('/tested?channel=ops');
    expect(got[0]?.headers['x-receiver-secret']).toBe('shh');
    expect(got[0]?.headers['idempotency-key']).toMatch(/^test-/);
    expect(JSON.parse(got[0]?.body ?? '')).toEqual({
      text: 'Test notification from Sluice to tested',
      body: 'This is a test sent from the console or the API; no alert changed state.',
      state: 'TEST',
    });
    expect(await ok('GET', `/alerts/${alert.id}`)).toEqual(before);
    expect(await ok('GET', `/alerts/${alert.id}/history`)).toEqual([]);
    expect(await s.sluice.store.repos.outbox.forAlert(alert.id)).toEqual([]);
  });

  it("a test send that the webhook refuses says so, once, without retrying; another team's webhook is a 404", async () => {
    const hook = await webhook('refusing');
    receiver.replies.set('/refusing', [503, 503, 503]);
    const sent = await ok('POST', `/webhooks/${hook.id}/test`);
    expect(sent).toEqual({ ok: false, status: 503, error: 'the webhook answered 503' });
    expect(receiver.received.filter((r) => r.path.startsWith('/refusing'))).toHaveLength(1);
    const theirs = await call('POST', `/webhooks/${hook.id}/test`, undefined, other);
    expect(theirs.statusCode).toBe(404);
    expect(theirs.json.code).toBe('SLUICE_ERR_WEBHOOK_NOT_FOUND');
    expect(receiver.received.filter((r) => r.path.startsWith('/refusing'))).toHaveLength(1);
  });

  it('a team has one test send under way at a time: another meanwhile is a 429', async () => {
    const hook = await webhook('slow');
    receiver.held.add('/slow');
    const first = ok('POST', `/webhooks/${hook.id}/test`);
    await waitFor('the first send at the receiver', async () =>
      receiver.received.some((r) => r.path.startsWith('/slow')),
    );
    const second = await call('POST', `/webhooks/${hook.id}/test`);
    expect(second.statusCode).toBe(429);
    expect(second.json.code).toBe('SLUICE_ERR_RATE_LIMITED');
    receiver.release();
    await expect(first).resolves.toEqual({ ok: true, status: 200 });
    // Once it answered, the next one goes.
    await expect(ok('POST', `/webhooks/${hook.id}/test`)).resolves.toEqual({ ok: true, status: 200 });
  });

  it('documents both in the OpenAPI document', async () => {
    const doc = (await s.request({ method: 'GET', url: '/api/v2/openapi.json', auth: null })).json;
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/api/v2/dashboards/{id}/tiles/{tileId}/data', '/api/v2/webhooks/{id}/test']),
    );
  });
});
