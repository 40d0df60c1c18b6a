import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestsSource, tileAlert } from './support/dashboards.js';
import { Receiver } from './support/receiver.js';
import { sql as runSql } from './support/runtime.js';
import { BOOTSTRAP_TOKEN, startSluice, type TestSluice } from './support/sluice.js';

describe('webhook notifications of alert state changes (a local receiver)', () => {
  let s: TestSluice;
  let receiver: Receiver;
  let now = new Date('2026-11-22T10:02:00Z');
  let sourceId: string;
  const auth = `Bearer ${BOOTSTRAP_TOKEN}`;
  const v2 = async (sluice: TestSluice, method: 'GET' | 'POST', url: string, body?: unknown) => {
    const response = await sluice.request({ method, url: `/api/v2${url}`, auth, ...(body ? { body } : {}) });
    if (response.statusCode !== 200) throw new Error(`${method} ${url}: ${response.body}`);
    return response.json;
  };
  const sql = (text: string) => runSql(s, text);
  /** A fresh table, tile, webhook (to a path of the receiver) and alert: above 5 errors per 5 minutes. */
  const setUp = async (path: string, extra: Record<string, unknown> = {}) => {
    const table = `t_${path.replace(/\W/g, '')}`;
    await sql(`CREATE TABLE app.${table} (ts DateTime('UTC'), status UInt16) ENGINE = MergeTree ORDER BY ts`);
    sourceId = (
      await v2(
        s,
        'POST',
        '/sources',
        requestsSource(s.serviceId, { name: table, from: { databaseName: 'app', tableName: table } }),
      )
    ).data.id;
    const dashboard = (
      await v2(s, 'POST', '/dashboards', {
        name: table,
        tiles: [
          {
            name: 'errors',
            x: 0,
            y: 0,
            w: 4,
            h: 4,
            config: { displayType: 'number', sourceId, select: [{ aggFn: 'count' }] },
          },
        ],
      })
    ).data;
    const webhook = (
      await v2(s, 'POST', '/webhooks', {
        name: path,
        url: `${receiver.url}/${path}`,
        headers: { 'X-Receiver-Secret': 'shh' },
        queryParams: { channel: 'ops' },
        body: '{"text": "{{title}}", "state": "{{state}}", "value": "{{value}}", "window": "{{startTime}}"}',
      })
    ).data;
    const alert = (
      await v2(
        s,
        'POST',
        '/alerts',
        tileAlert(dashboard, webhook.id, { name: `errors on ${path}`, threshold: 5, ...extra }),
      )
    ).data;
    return { table, alert };
  };
  const rows = (table: string, at: string, count: number) =>
    sql(`INSERT INTO app.${table} SELECT toDateTime('${at}', 'UTC') + number, 500 FROM numbers(${count})`);
  const tick = async (sluice: TestSluice, time: string) => {
    now = new Date(time);
    await sluice.sluice.evaluator.tick();
    await sluice.sluice.notifier.deliverDue();
  };
  const to = (path: string) => receiver.received.filter((r) => r.path.startsWith(`/${path}`));

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
    s = await startSluice({
      clock: () => now,
      alertTimer: true,
      env: { SLUICE_ALLOW_PRIVATE_WEBHOOKS: 'true' },
    });
    await sql('CREATE DATABASE IF NOT EXISTS app');
  });
  afterAll(async () => {
    await s?.close();
    await receiver?.stop();
  });

  it('one POST on OK -> ALERT and one resolve on ALERT -> OK, with the headers and the template filled in', async () => {
    const { table, alert } = await setUp('basic');
    await rows(table, '2026-11-22 10:05:00', 7);
    await tick(s, '2026-11-22T10:10:30Z');
    await tick(s, '2026-11-22T10:11:00Z'); // nothing new: no second POST
    expect(to('basic')).toHaveLength(1);
    const [fired] = to('basic');
    expect(fired?.path).toBe('/basic?channel=ops');
    expect(fired?.headers['content-type']).toBe('application/json');
    expect(fired?.headers['x-receiver-secret']).toBe('shh');
    expect(fired?.headers['idempotency-key']).toMatch(/^[0-9a-f]{32}$/);
    expect(JSON.parse(fired?.body ?? '')).toEqual({
      text: 'errors on basic is firing',
      state: 'ALERT',
      value: '7',
      window: '2026-11-22T10:05:00.000Z',
    });
    await tick(s, '2026-11-22T10:15:30Z'); // the next window is empty: OK again
    expect(to('basic')).toHaveLength(2);
    expect(JSON.parse(to('basic')[1]?.body ?? '')).toMatchObject({
      text: 'errors on basic is resolved',
      state: 'OK',
    });
    expect((await v2(s, 'GET', `/alerts/${alert.id}`)).data.state).toBe('OK');
  });

  it('a receiver that answers 500 then 200 gets the same notification twice, with the same key, delivered once', async () => {
    const { table } = await setUp('flaky');
    receiver.replies.set('/flaky', [500, 200]);
    await rows(table, '2026-11-22 10:15:00', 9);
    await tick(s, '2026-11-22T10:20:10Z');
    const got = to('flaky');
    expect(got).toHaveLength(2);
    expect(got[0]?.headers['idempotency-key']).toBe(got[1]?.headers['idempotency-key']);
    await tick(s, '2026-11-22T10:20:20Z');
    expect(to('flaky')).toHaveLength(2);
  });

  it('a receiver that answers 400 is not retried, and the failure is recorded', async () => {
    const { table, alert } = await setUp('refusing');
    receiver.replies.set('/refusing', [400]);
    await rows(table, '2026-11-22 10:20:00', 9);
    await tick(s, '2026-11-22T10:25:10Z');
    expect(to('refusing')).toHaveLength(1);
    const [row] = await s.sluice.store.repos.outbox.forAlert(alert.id);
    expect(row).toMatchObject({ attempts: 1, lastError: 'the webhook answered 400' });
    expect(row?.failedAt).toBeInstanceOf(Date);
  });

  it('a silenced alert evaluates and sends nothing', async () => {
    const { table, alert } = await setUp('silenced', { silenced: { until: '2026-11-23T00:00:00.000Z' } });
    await rows(table, '2026-11-22 10:25:00', 9);
    await tick(s, '2026-11-22T10:30:10Z');
    expect((await v2(s, 'GET', `/alerts/${alert.id}`)).data.state).toBe('ALERT');
    expect(to('silenced')).toHaveLength(0);
  });

  it('while an alert stays ALERT, nothing more is sent without SLUICE_ALERT_REMINDER', async () => {
    const { table } = await setUp('steady');
    for (const at of ['2026-11-22 10:40:00', '2026-11-22 10:45:00', '2026-11-22 10:50:00'])
      await rows(table, at, 9);
    await tick(s, '2026-11-22T10:45:10Z');
    await tick(s, '2026-11-22T10:55:10Z');
    expect(to('steady').map((r) => JSON.parse(r.body).state)).toEqual(['ALERT']);
  });

  it('a notification decided before a crash is sent after the restart', async () => {
    // A crash between deciding and sending is only reproducible with no sender running: this
    // instance has no alert timer, whose 1 s tick could evaluate (at the previous test's clock) or
    // send before the explicit tick below. The instance after the restart has it, as a user runs it.
    await s.close();
    s = await startSluice({ clock: () => now, env: { SLUICE_ALLOW_PRIVATE_WEBHOOKS: 'true' } });
    await sql('CREATE DATABASE IF NOT EXISTS app');
    const { table } = await setUp('restart');
    await rows(table, '2026-11-22 10:30:00', 9);
    now = new Date('2026-11-22T10:35:10Z');
    await s.sluice.evaluator.tick(); // decided and written to the outbox; not sent
    expect(to('restart')).toHaveLength(0);
    const dataDir = s.dataDir;
    await s.close({ keepData: true });
    s = await startSluice({
      dataDir,
      clock: () => now,
      alertTimer: true,
      env: { SLUICE_ALLOW_PRIVATE_WEBHOOKS: 'true' },
    });
    await s.sluice.notifier.idle(); // the start sends what is due, with no call of ours
    expect(to('restart')).toHaveLength(1);
    await rm(dataDir, { recursive: true, force: true }).catch(() => {});
  });
});

describe('reminders (SLUICE_ALERT_REMINDER)', () => {
  it('remind at most every SLUICE_ALERT_REMINDER while the alert stays ALERT', async () => {
    const receiver = new Receiver();
    await receiver.start();
    let now = new Date('2026-11-22T11:00:00Z');
    const s = await startSluice({
      clock: () => now,
      alertTimer: true,
      env: { SLUICE_ALLOW_PRIVATE_WEBHOOKS: 'true', SLUICE_ALERT_REMINDER: '10m' },
    });
    try {
      const auth = `Bearer ${BOOTSTRAP_TOKEN}`;
      const post = async (url: string, body: unknown) =>
        (await s.request({ method: 'POST', url, body, auth: url.startsWith('/v1') ? undefined : auth })).json;
      const query = `/v1/organizations/${s.organizationId}/services/${s.serviceId}/query`;
      await post(query, { sql: 'CREATE DATABASE app' });
      await post(query, { sql: "CREATE TABLE app.r (ts DateTime('UTC')) ENGINE = MergeTree ORDER BY ts" });
      await post(query, {
        sql: "INSERT INTO app.r SELECT toDateTime('2026-11-22 11:00:00', 'UTC') + number * 30 FROM numbers(60)",
      });
      const source = (
        await post(
          '/api/v2/sources',
          requestsSource(s.serviceId, { name: 'r', from: { databaseName: 'app', tableName: 'r' } }),
        )
      ).data;
      const dashboard = (
        await post('/api/v2/dashboards', {
          name: 'r',
          tiles: [
            {
              name: 'n',
              x: 0,
              y: 0,
              w: 1,
              h: 1,
              config: { displayType: 'number', sourceId: source.id, select: [{ aggFn: 'count' }] },
            },
          ],
        })
      ).data;
      const webhook = (await post('/api/v2/webhooks', { name: 'r', url: `${receiver.url}/r` })).data;
      await post('/api/v2/alerts', tileAlert(dashboard, webhook.id, { threshold: 1 }));
      for (const minute of [5, 10, 15, 20, 25, 30]) {
        now = new Date(Date.UTC(2026, 10, 22, 11, minute, 10));
        await s.sluice.evaluator.tick();
        await s.sluice.notifier.deliverDue();
      }
      // Windows 11:00 .. 11:25 all break the threshold: the first fires, then one reminder per 10 minutes.
      const sent = receiver.received.map((r) => JSON.parse(r.body));
      expect(sent.map((n) => [n.startTime, n.title])).toEqual([
        ['2026-11-22T11:00:00.000Z', `Alert ${sent[0].link.split('/').pop()} is firing`],
        ['2026-11-22T11:10:00.000Z', `Alert ${sent[0].link.split('/').pop()} is still firing`],
        ['2026-11-22T11:20:00.000Z', `Alert ${sent[0].link.split('/').pop()} is still firing`],
      ]);
    } finally {
      await s.close();
      await receiver.stop();
    }
  });
});
