import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestsSource, tileAlert } from './support/dashboards.js';
import { BOOTSTRAP_TOKEN, startSluice, type TestSluice, teamToken } from './support/sluice.js';

const ALERT_KEYS = [
  'id',
  'name',
  'message',
  'threshold',
  'interval',
  'thresholdType',
  'source',
  'state',
  'channel',
  'team',
  'tileId',
  'dashboard',
  'createdAt',
  'updatedAt',
];
const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('the alerts area under /api/v2', () => {
  let s: TestSluice;
  let other: string; // a token of another team
  let sourceId: string;
  let dashboard: { id: string; tiles: { id: string }[] };
  let webhookId: string;
  const bearer = (token: string) => `Bearer ${token}`;
  const me = bearer(BOOTSTRAP_TOKEN);
  const call = (
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    url: string,
    body?: unknown,
    auth: string | null = me,
  ) => s.request({ method, url, auth, ...(body === undefined ? {} : { body }) });
  const alertBody = (overrides: Record<string, unknown> = {}) =>
    tileAlert(dashboard, webhookId, { threshold: 10, ...overrides });

  beforeAll(async () => {
    s = await startSluice({ env: { SLUICE_ALLOW_PRIVATE_WEBHOOKS: 'true' } });
    const query = `/v1/organizations/${s.organizationId}/services/${s.serviceId}/query`;
    for (const sql of [
      'CREATE DATABASE IF NOT EXISTS app',
      'CREATE TABLE IF NOT EXISTS app.requests (ts DateTime, status UInt16, latency Float64, path String) ENGINE = MergeTree ORDER BY ts',
    ]) {
      expect((await s.request({ method: 'POST', url: query, body: { sql } })).statusCode).toBe(200);
    }
    other = bearer(await teamToken(s, 'others', 'eve'));
    const source = await call('POST', '/api/v2/sources', requestsSource(s.serviceId));
    expect(source.statusCode, source.body).toBe(200);
    sourceId = source.json.data.id;
    const created = await call('POST', '/api/v2/dashboards', {
      name: 'service health',
      tags: ['prod'],
      tiles: [
        tile('errors', { aggFn: 'count', where: 'status >= 500', whereLanguage: 'sql' }),
        tile('p99', { aggFn: 'quantile', level: 0.99, valueExpression: 'latency' }),
      ],
    });
    expect(created.statusCode, created.body).toBe(200);
    dashboard = created.json.data;
    const webhook = await call('POST', '/api/v2/webhooks', {
      name: 'on-call',
      url: 'http://127.0.0.1:9/hook',
      headers: { Authorization: 'Bearer WEBHOOK-SECRET-never-returned' },
      queryParams: { key: 'QUERY-SECRET-never-returned' },
      body: '{"text": "{{title}}"}',
    });
    expect(webhook.statusCode, webhook.body).toBe(200);
    webhookId = webhook.json.data.id;
  });
  afterAll(() => s.close());

  function tile(name: string, select: Record<string, unknown>) {
    return { name, x: 0, y: 0, w: 6, h: 4, config: { displayType: 'line', sourceId, select: [select] } };
  }

  it('GET /api/v2 names the version and the user; no or an unknown token is a 401 with a JSON body', async () => {
    const hello = await call('GET', '/api/v2');
    expect(hello.json).toEqual({
      version: 'v2',
      user: { id: expect.any(String), name: 'admin', team: expect.any(String) },
    });
    for (const [auth, hint] of [
      [null, 'send Authorization: Bearer <access token>'],
      ['Basic abc', 'send Authorization: Bearer <access token>'],
      ['Bearer nope', 'the access token is wrong or was revoked'],
    ] as const) {
      const response = await call('GET', '/api/v2/alerts', undefined, auth);
      expect(response.statusCode).toBe(401);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="sluice"');
      expect(Object.keys(response.json).sort()).toEqual(['code', 'message']);
      expect(response.json.code).toBe('SLUICE_ERR_UNAUTHENTICATED');
      expect(response.json.message).toMatch(/^Unauthorized: /);
      expect(response.json.message).toContain(hint);
    }
  });

  it('a created tile alert has exactly the keys of the platform record, and GET returns the same data', async () => {
    const created = await call('POST', '/api/v2/alerts', alertBody());
    expect(created.statusCode, created.body).toBe(200);
    const alert = created.json.data;
    expect(Object.keys(alert)).toEqual(ALERT_KEYS);
    expect(alert).toMatchObject({
      name: null,
      message: null,
      threshold: 10,
      interval: '5m',
      thresholdType: 'above',
      source: 'tile',
      state: 'OK',
      channel: { type: 'webhook', webhookId },
      tileId: dashboard.tiles[0]?.id,
      dashboard: dashboard.id,
    });
    expect(alert.id).toMatch(/^[0-9a-f]{24}$/);
    expect(alert.createdAt).toMatch(ISO_MS_UTC);
    expect(alert.updatedAt).toMatch(ISO_MS_UTC);
    const read = await call('GET', `/api/v2/alerts/${alert.id}`);
    expect(read.statusCode).toBe(200);
    expect(read.json).toEqual({ data: alert });
  });

  it('lists with limit and offset and meta; an empty page past the end; bad paging is a 400', async () => {
    for (let i = 0; i < 4; i += 1) await call('POST', '/api/v2/alerts', alertBody({ name: `alert ${i}` }));
    const all = await call('GET', '/api/v2/alerts');
    const total = all.json.meta.total;
    expect(all.json.meta).toEqual({ total, limit: 1000, offset: 0 });
    expect(all.json.data).toHaveLength(total);
    const page = await call('GET', '/api/v2/alerts?limit=2&offset=1');
    expect(page.json.meta).toEqual({ total, limit: 2, offset: 1 });
    expect(page.json.data.map((a: any) => a.id)).toEqual(all.json.data.slice(1, 3).map((a: any) => a.id));
    const past = await call('GET', `/api/v2/alerts?offset=${total + 5}`);
    expect(past.json).toEqual({ data: [], meta: { total, limit: 1000, offset: total + 5 } });
    for (const query of ['limit=0', 'limit=5000', 'offset=-1', 'limit=abc', 'limit=1.5']) {
      const bad = await call('GET', `/api/v2/alerts?${query}`);
      expect(bad.statusCode, query).toBe(400);
      expect(bad.json.message).toMatch(/^Query validation failed: (limit|offset): Expected an integer/);
      expect(bad.json.code).toBe('SLUICE_ERR_VALIDATION');
    }
  });

  it('PUT replaces the whole alert; DELETE answers {} and then the alert is 404', async () => {
    const alert = (await call('POST', '/api/v2/alerts', alertBody({ name: 'to replace', message: 'hello' })))
      .json.data;
    // Read first: a GET's JSON is made once per record (src/http/record-json.ts) and must not outlive it.
    expect((await call('GET', `/api/v2/alerts/${alert.id}`)).json).toEqual({ data: alert });
    const replaced = await call(
      'PUT',
      `/api/v2/alerts/${alert.id}`,
      alertBody({ threshold: 3, interval: '1h' }),
    );
    expect(replaced.statusCode).toBe(200);
    expect(replaced.json.data).toMatchObject({
      id: alert.id,
      name: null,
      message: null,
      threshold: 3,
      interval: '1h',
    });
    expect(replaced.json.data.createdAt).toBe(alert.createdAt);
    expect((await call('GET', `/api/v2/alerts/${alert.id}`)).json).toEqual({ data: replaced.json.data });
    const deleted = await call('DELETE', `/api/v2/alerts/${alert.id}`);
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json).toEqual({});
    const again = await call('DELETE', `/api/v2/alerts/${alert.id}`);
    expect(again.statusCode).toBe(200); // idempotent, as the original API: scripts rely on it
    const gone = await call('GET', `/api/v2/alerts/${alert.id}`);
    expect(gone.statusCode).toBe(404);
    expect(gone.json).toEqual({ message: 'Alert not found', code: 'SLUICE_ERR_ALERT_NOT_FOUND' });
    const notAnId = await call('GET', '/api/v2/alerts/not-an-id');
    expect(notAnId.statusCode).toBe(400);
    expect(notAnId.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it("another team's alert is a 404; another team's dashboard, tile or webhook is a 400", async () => {
    const alert = (await call('POST', '/api/v2/alerts', alertBody())).json.data;
    expect((await call('GET', `/api/v2/alerts/${alert.id}`, undefined, other)).json).toEqual({
      message: 'Alert not found',
      code: 'SLUICE_ERR_ALERT_NOT_FOUND',
    });
    // Delete is idempotent: another team's alert answers as a gone one (200) and stays.
    expect((await call('DELETE', `/api/v2/alerts/${alert.id}`, undefined, other)).statusCode).toBe(200);
    expect((await call('GET', `/api/v2/alerts/${alert.id}`)).statusCode).toBe(200);
    const theirs = await call('POST', '/api/v2/alerts', alertBody(), other);
    expect(theirs.statusCode).toBe(400);
    expect(theirs.json.message).toBe(
      'Body validation failed: dashboardId: No such dashboard in your team; channel.webhookId: No such webhook in your team',
    );
    expect(theirs.json.code).toBe('SLUICE_ERR_VALIDATION');
    const unknownTile = await call('POST', '/api/v2/alerts', alertBody({ tileId: 'nope' }));
    expect(unknownTile.json.message).toBe('Body validation failed: tileId: No such tile on the dashboard');
    expect(unknownTile.json.code).toBe('SLUICE_ERR_VALIDATION');
    const unknownDashboard = await call('POST', '/api/v2/alerts', alertBody({ dashboardId: '0'.repeat(24) }));
    expect(unknownDashboard.json.message).toContain('dashboardId: No such dashboard in your team');
    expect(unknownDashboard.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('every threshold type, with and without thresholdMax', async () => {
    for (const type of ['above', 'below', 'above_exclusive', 'below_or_equal', 'equal', 'not_equal']) {
      expect(
        (await call('POST', '/api/v2/alerts', alertBody({ thresholdType: type }))).statusCode,
        type,
      ).toBe(200);
      const extra = await call(
        'POST',
        '/api/v2/alerts',
        alertBody({ thresholdType: type, thresholdMax: 20 }),
      );
      expect(extra.json.message, type).toBe(
        'Body validation failed: thresholdMax: Only used with thresholdType between or not_between',
      );
      expect(extra.json.code).toBe('SLUICE_ERR_VALIDATION');
    }
    for (const type of ['between', 'not_between']) {
      const ranged = await call(
        'POST',
        '/api/v2/alerts',
        alertBody({ thresholdType: type, thresholdMax: 20 }),
      );
      expect(ranged.statusCode, type).toBe(200);
      expect(Object.keys(ranged.json.data)).toEqual([...ALERT_KEYS, 'thresholdMax']);
      expect(ranged.json.data.thresholdMax).toBe(20);
      const missing = await call('POST', '/api/v2/alerts', alertBody({ thresholdType: type }));
      expect(missing.json.message).toBe(`Body validation failed: thresholdMax: Required for ${type}`);
      expect(missing.json.code).toBe('SLUICE_ERR_VALIDATION');
      const inverted = await call(
        'POST',
        '/api/v2/alerts',
        alertBody({ thresholdType: type, thresholdMax: 5 }),
      );
      expect(inverted.json.message).toBe('Body validation failed: thresholdMax: Must be at least threshold');
      expect(inverted.json.code).toBe('SLUICE_ERR_VALIDATION');
    }
    const unknown = await call('POST', '/api/v2/alerts', alertBody({ thresholdType: 'sideways' }));
    expect(unknown.json.message).toContain('thresholdType: Use one of: above, below');
    expect(unknown.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('a body with only {name, message} lists every missing field', async () => {
    const response = await call('POST', '/api/v2/alerts', { name: 'x', message: 'y' });
    expect(response.statusCode).toBe(400);
    expect(response.json).toEqual({
      message:
        'Body validation failed: threshold: Required; interval: Required; thresholdType: Required; source: Required; dashboardId: Required; tileId: Required; channel: Required',
      code: 'SLUICE_ERR_VALIDATION',
    });
    const interval = await call('POST', '/api/v2/alerts', alertBody({ interval: '2m' }));
    expect(interval.json.message).toBe(
      'Body validation failed: interval: Use one of: 1m, 5m, 15m, 30m, 1h, 6h, 12h, 1d',
    );
    expect(interval.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('webhook headers and query parameters are write-only; a webhook in use cannot be deleted', async () => {
    const list = await call('GET', '/api/v2/webhooks');
    expect(list.json.meta.total).toBeGreaterThan(0);
    expect(list.body).not.toMatch(/SECRET-never-returned|headers|queryParams/);
    const one = await call('GET', `/api/v2/webhooks/${webhookId}`);
    expect(Object.keys(one.json.data)).toEqual([
      'id',
      'name',
      'url',
      'description',
      'body',
      'createdAt',
      'updatedAt',
    ]);
    const refused = await call('DELETE', `/api/v2/webhooks/${webhookId}`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json.code).toBe('SLUICE_ERR_WEBHOOK_IN_USE');
    expect(refused.json.message).toMatch(/^Webhook is used by \d+ alerts: delete or change them first$/);
    const spare = await call('POST', '/api/v2/webhooks', { name: 'spare', url: 'https://example.com/hook' });
    expect((await call('DELETE', `/api/v2/webhooks/${spare.json.data.id}`)).json).toEqual({});
    const bad = await call('POST', '/api/v2/webhooks', { name: 'ftp', url: 'ftp://example.com/x' });
    expect(bad.json.message).toBe('Body validation failed: url: Must be an http or https URL');
    expect(bad.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('a dashboard update that drops a tile deletes its alerts; tile ids are kept', async () => {
    const board = (
      await call('POST', '/api/v2/dashboards', {
        name: 'temporary',
        tiles: [tile('a', { aggFn: 'count' }), tile('b', { aggFn: 'count' })],
      })
    ).json.data;
    const [a, b] = board.tiles;
    const onA = (await call('POST', '/api/v2/alerts', alertBody({ dashboardId: board.id, tileId: a.id })))
      .json.data;
    const onB = (await call('POST', '/api/v2/alerts', alertBody({ dashboardId: board.id, tileId: b.id })))
      .json.data;
    const updated = await call('PUT', `/api/v2/dashboards/${board.id}`, {
      name: 'temporary',
      tiles: [{ ...b, name: 'b renamed' }],
    });
    expect(updated.statusCode, updated.body).toBe(200);
    expect(updated.json.data.tiles.map((t: any) => [t.id, t.name])).toEqual([[b.id, 'b renamed']]);
    expect((await call('GET', `/api/v2/alerts/${onA.id}`)).statusCode).toBe(404);
    expect((await call('GET', `/api/v2/alerts/${onB.id}`)).statusCode).toBe(200);
    expect((await call('DELETE', `/api/v2/dashboards/${board.id}`)).json).toEqual({});
    expect((await call('GET', `/api/v2/alerts/${onB.id}`)).statusCode).toBe(404);
  });

  it('a tile filter in Lucene must be one the service reads', async () => {
    const bad = await call('POST', '/api/v2/dashboards', {
      name: 'lucene',
      tiles: [tile('t', { aggFn: 'count', where: 'level:error AND (status:500', whereLanguage: 'lucene' })],
    });
    expect(bad.json.message).toBe(
      'Body validation failed: tiles[0].config.select[0].where: Not a filter this service reads: a parenthesis is not closed',
    );
    expect(bad.json.code).toBe('SLUICE_ERR_VALIDATION');
    const good = await call('POST', '/api/v2/dashboards', {
      name: 'lucene',
      tiles: [
        tile('t', { aggFn: 'count', where: 'path:/api* AND status:[500 TO 599]', whereLanguage: 'lucene' }),
      ],
    });
    expect(good.statusCode).toBe(200);
  });

  it('sources name a table that exists in a service of the organization', async () => {
    const missing = await call('POST', '/api/v2/sources', {
      name: 'nope',
      kind: 'log',
      serviceId: s.serviceId,
      from: { databaseName: 'app', tableName: 'missing' },
      timestampValueExpression: 'ts',
    });
    expect(missing.json.message).toBe(
      'Body validation failed: from.tableName: app.missing does not exist in service default',
    );
    expect(missing.json.code).toBe('SLUICE_ERR_VALIDATION');
    const foreign = await call('POST', '/api/v2/sources', {
      name: 'nope',
      kind: 'metric',
      serviceId: '00000000-0000-0000-0000-000000000000',
      from: { databaseName: 'app', tableName: 'requests' },
      timestampValueExpression: 'ts',
    });
    expect(foreign.json.message).toBe(
      "Body validation failed: serviceId: No such service in your team's organization",
    );
    expect(foreign.json.code).toBe('SLUICE_ERR_VALIDATION');
    expect((await call('GET', `/api/v2/sources/${sourceId}`, undefined, other)).json).toEqual({
      message: 'Source not found',
      code: 'SLUICE_ERR_ALERT_SOURCE_NOT_FOUND',
    });
  });

  it('every team sees a built-in source of each service, its pipe history per minute, which cannot be changed or deleted', async () => {
    const mine = (await call('GET', '/api/v2/sources')).json;
    const theirs = (await call('GET', '/api/v2/sources', undefined, other)).json;
    const builtIn = mine.data[0];
    expect(builtIn).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{24}$/),
      name: 'Pipe history of default',
      kind: 'log',
      serviceId: s.serviceId,
      from: { databaseName: '_sluice_history', tableName: 'pipe_minutes' },
      timestampValueExpression: 'minute',
    });
    // The same source for another team of the organization; their own sources they do not share.
    expect(theirs.data[0]).toEqual(builtIn);
    expect(mine.data.map((source: { id: string }) => source.id)).toContain(sourceId);
    expect(theirs.data.map((source: { id: string }) => source.id)).not.toContain(sourceId);
    // Paged as any list: the built-in first, then the team's own.
    const second = (await call('GET', '/api/v2/sources?limit=1&offset=1')).json;
    expect(second.data).toEqual([mine.data[1]]);
    expect((await call('GET', `/api/v2/sources/${builtIn.id}`, undefined, other)).json.data).toEqual(builtIn);
    // A tile reads it like any source (the table is made in the service when first asked for).
    const tiled = await call('POST', '/api/v2/dashboards', {
      name: 'pipes',
      tiles: [
        {
          name: 'rows',
          x: 0,
          y: 0,
          w: 4,
          h: 4,
          config: {
            displayType: 'line',
            sourceId: builtIn.id,
            select: [{ aggFn: 'sum', valueExpression: 'rows' }],
          },
        },
      ],
    });
    expect(tiled.statusCode, tiled.body).toBe(200);
    for (const [method, body] of [
      ['PUT', { ...builtIn, id: undefined, name: 'mine now' }],
      ['DELETE', undefined],
    ] as const) {
      const refused = await call(method, `/api/v2/sources/${builtIn.id}`, body);
      expect(refused.statusCode).toBe(400);
      expect(refused.json.message).toContain('built-in source');
      expect(refused.json.code).toBe('SLUICE_ERR_VALIDATION');
    }
  });

  it('GET /api/v2/openapi.json documents the area with bearer tokens', async () => {
    const response = await call('GET', '/api/v2/openapi.json', undefined, null);
    const doc = response.json;
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
    // Its description speaks of the area's own scheme, not the /v1 keys.
    expect(doc.info.description).toContain('Authorization: Bearer');
    expect(doc.info.description).not.toMatch(/Basic|API key/);
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/api/v2',
      '/api/v2/alerts',
      '/api/v2/alerts/{id}',
      '/api/v2/alerts/{id}/history',
      '/api/v2/dashboards',
      '/api/v2/dashboards/{id}',
      '/api/v2/dashboards/{id}/tiles/{tileId}/data',
      '/api/v2/sources',
      '/api/v2/sources/{id}',
      '/api/v2/webhooks',
      '/api/v2/webhooks/{id}',
      '/api/v2/webhooks/{id}/test',
    ]);
  });
});
