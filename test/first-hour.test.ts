import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oneTileDashboard, requestsSource, tileAlert } from './support/dashboards.js';
import { Receiver } from './support/receiver.js';
import { sql } from './support/runtime.js';
import { BOOTSTRAP_TOKEN, startSluice, type TestSluice } from './support/sluice.js';

/** A new user's first hour with alerts: mistakes are 400s at create, Lucene ranges work. */
describe('alerts that tell you what is wrong', () => {
  let s: TestSluice;
  const now = new Date('2026-11-22T10:07:00Z');
  let sourceId: string;
  const auth = `Bearer ${BOOTSTRAP_TOKEN}`;
  const post = (url: string, body: unknown) =>
    s.request({ method: 'POST', url: `/api/v2${url}`, body, auth });
  const tile = (select: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    oneTileDashboard(sourceId, select, extra);

  beforeAll(async () => {
    s = await startSluice({
      clock: () => now,
      alertTimer: true,
      env: { SLUICE_ALLOW_PRIVATE_WEBHOOKS: 'true' },
    });
    await sql(s, 'CREATE DATABASE IF NOT EXISTS app');
    await sql(
      s,
      "CREATE TABLE app.readings (ts DateTime('UTC'), temp Float64, room String) ENGINE = MergeTree ORDER BY ts",
    );
    const source = await post(
      '/sources',
      requestsSource(s.serviceId, {
        name: 'readings',
        kind: 'metric',
        from: { databaseName: 'app', tableName: 'readings' },
      }),
    );
    expect(source.statusCode, source.body).toBe(200);
    sourceId = source.json.data.id;
  });
  afterAll(() => s.close());

  it("a source's timestamp expression that does not run on its table is a 400 at create", async () => {
    const response = await post('/sources', {
      name: 'bad',
      kind: 'metric',
      serviceId: s.serviceId,
      from: { databaseName: 'app', tableName: 'readings' },
      timestampValueExpression: 'created_at',
    });
    expect(response.statusCode).toBe(400);
    expect(response.json.message).toContain('timestampValueExpression: does not run on the source');
    expect(response.json.message).toContain('created_at');
    expect(response.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it("a tile's valueExpression, where, groupBy and Lucene filter are run on the table at create", async () => {
    const cases: [unknown, string][] = [
      [tile({ aggFn: 'avg', valueExpression: 'temperature' }), 'tiles[0].config.select[0].valueExpression'],
      [tile({ aggFn: 'sum', valueExpression: 'room' }), 'tiles[0].config.select[0].valueExpression'],
      [tile({ where: 'floor = 3', whereLanguage: 'sql' }), 'tiles[0].config.select[0].where'],
      [tile({ where: 'floor:3', whereLanguage: 'lucene' }), 'tiles[0].config.select[0].where'],
      [tile({}, { groupBy: 'building' }), 'tiles[0].config.groupBy'],
    ];
    for (const [body, path] of cases) {
      const response = await post('/dashboards', body);
      expect(response.statusCode, path).toBe(400);
      expect(response.json.message).toContain(`${path}: does not run on the source's table`);
      expect(response.json.code, path).toBe('SLUICE_ERR_VALIDATION');
    }
    const fine = await post(
      '/dashboards',
      tile({ aggFn: 'avg', valueExpression: 'temp', where: "room = 'a'" }),
    );
    expect(fine.statusCode, fine.body).toBe(200);
  });

  it('Lucene comparisons field:>30 filter the rows an alert counts', async () => {
    await sql(
      s,
      "INSERT INTO app.readings VALUES ('2026-11-22 10:01:00', 35, 'a'), ('2026-11-22 10:02:00', 31, 'b'), ('2026-11-22 10:03:00', 12, 'c')",
    );
    const dashboard = await post('/dashboards', tile({ where: 'temp:>30', whereLanguage: 'lucene' }));
    expect(dashboard.statusCode, dashboard.body).toBe(200);
    const webhook = await post('/webhooks', { name: 'w', url: 'http://127.0.0.1:9/hook' });
    const alert = await post('/alerts', {
      threshold: 2,
      interval: '5m',
      thresholdType: 'above',
      source: 'tile',
      dashboardId: dashboard.json.data.id,
      tileId: dashboard.json.data.tiles[0].id,
      channel: { type: 'webhook', webhookId: webhook.json.data.id },
    });
    expect(alert.statusCode, alert.body).toBe(200);
    await s.sluice.evaluator.tick();
    const history = await s.request({
      method: 'GET',
      url: `/api/v2/alerts/${alert.json.data.id}/history`,
      auth,
    });
    // Two of the three readings are over 30: the window counts 2, which is at the threshold (>=).
    expect(history.json.data).toEqual([
      expect.objectContaining({ windowStart: '2026-11-22T10:00:00.000Z', state: 'ALERT', value: 2 }),
    ]);
  });
});

describe('alerting you can watch: metrics, delivery log lines, absolute links', () => {
  it('counts windows, decisions and deliveries, logs each delivery, and links to SLUICE_PUBLIC_URL', async () => {
    const receiver = new Receiver();
    await receiver.start();
    const now = new Date('2026-11-22T10:06:00Z');
    const s = await startSluice({
      clock: () => now,
      env: { SLUICE_ALLOW_PRIVATE_WEBHOOKS: 'true', SLUICE_PUBLIC_URL: 'https://sluice.example.com/' },
    });
    try {
      const auth = `Bearer ${BOOTSTRAP_TOKEN}`;
      const post = async (url: string, body: unknown) =>
        (await s.request({ method: 'POST', url: `/api/v2${url}`, body, auth })).json.data;
      await sql(s, "CREATE TABLE default.pings (ts DateTime('UTC')) ENGINE = MergeTree ORDER BY ts");
      await sql(s, "INSERT INTO default.pings VALUES ('2026-11-22 10:01:00'), ('2026-11-22 10:02:00')");
      const source = await post(
        '/sources',
        requestsSource(s.serviceId, { name: 'pings', from: { databaseName: 'default', tableName: 'pings' } }),
      );
      const config = { displayType: 'number', sourceId: source.id, select: [{ aggFn: 'count' }] };
      const dashboard = await post('/dashboards', {
        name: 'p',
        tiles: [{ name: 'n', x: 0, y: 0, w: 1, h: 1, config }],
      });
      const webhook = await post('/webhooks', { name: 'w', url: `${receiver.url}/hook` });
      const alert = await post('/alerts', tileAlert(dashboard, webhook.id, { threshold: 1 }));
      await s.sluice.evaluator.tick();
      await s.sluice.notifier.deliverDue();
      const [sent] = receiver.received.map((r) => JSON.parse(r.body));
      expect(sent.link).toBe(`https://sluice.example.com/api/v2/alerts/${alert.id}`);
      const metrics = (await s.request({ method: 'GET', url: '/metrics' })).body;
      expect(metrics).toContain('sluice_alert_windows_evaluated_total{outcome="evaluated"} 1');
      expect(metrics).toContain('sluice_alert_decisions_total{state="ALERT"} 1');
      expect(metrics).toContain('sluice_webhook_deliveries_total{outcome="delivered"} 1');
      const delivered = s.logs
        .map((line) => JSON.parse(line))
        .find((l) => l.msg === 'webhook notification delivered');
      expect(delivered).toMatchObject({ alertId: alert.id, status: 200, attempt: 1 });
    } finally {
      await s.close();
      await receiver.stop();
    }
  });
});
