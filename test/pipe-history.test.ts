import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningKafka, startKafka } from './support/kafka.js';
import { kafkaPipe, produce } from './support/kafka-pipes.js';
import { Receiver } from './support/receiver.js';
import { createPipe, sql, statusOf } from './support/runtime.js';
import { BOOTSTRAP_TOKEN, startSluice, type TestSluice } from './support/sluice.js';
import { waitFor } from './support/wait.js';

// Pipes observe themselves (README, "Pipe history"): a Kafka pipe on a real broker writes its
// history into its service, read per minute, and alerts on the service's built-in source watch it
// like any data, with Sluice run as a user runs it (runtime and alert timer on, real clock).

let kafka: RunningKafka;
let s: TestSluice;
const receiver = new Receiver();
const auth = `Bearer ${BOOTSTRAP_TOKEN}`;

beforeAll(async () => {
  kafka = await startKafka();
  await receiver.start();
  s = await startSluice({
    runtime: true,
    alertTimer: true,
    env: {
      SLUICE_ALLOW_PLAINTEXT_KAFKA: 'true',
      SLUICE_ALLOW_PRIVATE_WEBHOOKS: 'true',
      SLUICE_ALERT_TICK_SECONDS: '1',
    },
  });
}, 600_000);

afterAll(async () => {
  await s?.close();
  await receiver.stop();
  await kafka?.stop();
});

async function v2(method: 'GET' | 'POST', url: string, body?: unknown) {
  const response = await s.request({ method, url: `/api/v2${url}`, auth, ...(body ? { body } : {}) });
  if (response.statusCode !== 200) throw new Error(`${method} ${url}: ${response.body}`);
  return response.json;
}

const messages = (topic: string, from: number, count: number, bad = (_: number) => false) =>
  Array.from({ length: count }, (_, i) => ({
    topic,
    value: bad(from + i)
      ? `{"id": ${from + i}, "name": "unterminated`
      : JSON.stringify({ id: from + i, name: `n${from + i}` }),
  }));

/** A pipe's history per minute, oldest first. */
async function minutesOf(pipeId: string) {
  return sql(
    s,
    `SELECT toString(minute) AS minute, rows, batches, bad_records, state FROM _sluice_history.pipe_minutes WHERE pipe_id = '${pipeId}' ORDER BY minute`,
  );
}

/** An alert on a one-tile dashboard over the service's built-in source, notifying the receiver at `path`. */
async function alertOn(
  name: string,
  select: Record<string, unknown>,
  alert: Record<string, unknown>,
  path: string,
) {
  const { data: sources } = await v2('GET', '/sources');
  const builtIn = sources.find(
    (source: { serviceId: string; from: { tableName: string } }) =>
      source.serviceId === s.serviceId && source.from.tableName === 'pipe_minutes',
  );
  expect(builtIn).toMatchObject({
    from: { databaseName: '_sluice_history', tableName: 'pipe_minutes' },
    timestampValueExpression: 'minute',
  });
  const { data: dashboard } = await v2('POST', '/dashboards', {
    name,
    tiles: [
      {
        name,
        x: 0,
        y: 0,
        w: 4,
        h: 4,
        config: { displayType: 'line', sourceId: builtIn.id, select: [select] },
      },
    ],
  });
  const { data: webhook } = await v2('POST', '/webhooks', {
    name,
    url: `${receiver.url}/${path}`,
    body: '{"state": "{{state}}", "value": "{{value}}"}',
  });
  return (
    await v2('POST', '/alerts', {
      name,
      interval: '1m',
      source: 'tile',
      dashboardId: dashboard.id,
      tileId: dashboard.tiles[0].id,
      channel: { type: 'webhook', webhookId: webhook.id },
      ...alert,
    })
  ).data;
}

/** The notifications of `state` the receiver got at `path`, from the `from`th request on. */
const notified = (path: string, state: string, from = 0) =>
  receiver.received
    .slice(from)
    .filter((r) => r.path.startsWith(`/${path}`) && JSON.parse(r.body).state === state);

describe('pipe history', () => {
  it('holds one row per pipe and active minute whose sums equal the destination, shown in the status', async () => {
    await kafka.createTopic('history', 2);
    const id = await createPipe(s, {
      ...kafkaPipe('history', { brokers: `plaintext://${kafka.bootstrap.plaintext}`, topics: 'history' }),
      settings: { streaming_max_insert_wait_ms: 500 },
    });
    // A round, then two more once the next minute has begun: the pipe writes in two minutes or more.
    await produce(kafka.connection('plaintext'), messages('history', 0, 1000));
    await waitFor('the first round in the table', async () => (await statusOf(s, id)).rowsWritten === 1000);
    const nextMinute = 60_000 - (Date.now() % 60_000) + 1_000;
    await new Promise((resolve) => setTimeout(resolve, nextMinute));
    await produce(kafka.connection('plaintext'), messages('history', 1000, 2000));
    await waitFor('every message in the table', async () => {
      const [row] = await sql(s, 'SELECT count() AS n FROM kafka.history');
      return Number(row?.n) === 3000;
    });
    const minutes = await waitFor('the history of every batch', async () => {
      const read = await minutesOf(id);
      return read.reduce((sum, m) => sum + Number(m.rows), 0) === 3000 ? read : undefined;
    });
    expect(minutes.length).toBeGreaterThanOrEqual(2);
    expect(new Set(minutes.map((m) => m.minute)).size).toBe(minutes.length);
    for (const minute of minutes) expect(minute).toMatchObject({ bad_records: 0, state: 'Running' });
    // Each batch once: as many rows of batches as batches the store committed, each its own.
    const [batches] = await sql(
      s,
      `SELECT count() AS rows, uniqExact(batch) AS batches, max(lag) >= 0 AS lagged, countIf(source_age_ms IS NOT NULL) AS aged FROM _sluice_history.pipe_events WHERE pipe_id = '${id}' AND kind = 'batch'`,
    );
    expect(Number(batches?.rows)).toBe(Number(batches?.batches));
    expect(Number(batches?.batches)).toBe(minutes.reduce((sum, m) => sum + Number(m.batches), 0));
    expect(Number(batches?.aged)).toBe(Number(batches?.rows));
    // The status's last hour, read from the same table: 60 minutes, the rows per second of each.
    const status = await statusOf(s, id);
    expect(status.lastHour).toHaveLength(60);
    const perMinute = status.lastHour.map((m: { rowsPerSecond: number }) => Math.round(m.rowsPerSecond * 60));
    expect(perMinute.reduce((a: number, b: number) => a + b, 0)).toBe(3000);
    // An admin may drop the table; Sluice makes it again with the next batch.
    await sql(s, 'DROP TABLE _sluice_history.pipe_events SYNC');
    await produce(kafka.connection('plaintext'), messages('history', 3000, 10));
    await waitFor('the history made again', async () => {
      const read = await minutesOf(id);
      return read.reduce((sum, m) => sum + Number(m.rows), 0) === 10 ? read : undefined;
    });
  }, 300_000);

  it('a "sum of rows below 1 over 1m" alert fires when the broker stops and resolves when it is back', async () => {
    await kafka.createTopic('quiet', 1);
    const id = await createPipe(s, {
      ...kafkaPipe('quiet', { brokers: `plaintext://${kafka.bootstrap.plaintext}`, topics: 'quiet' }),
      settings: { streaming_max_insert_wait_ms: 500 },
    });
    let next = 0;
    const trickle = async () => {
      await produce(kafka.connection('plaintext'), messages('quiet', next, 50));
      next += 50;
    };
    await trickle();
    await waitFor('the first rows', async () => (await statusOf(s, id)).rowsWritten >= 50);
    const alert = await alertOn(
      'quiet',
      { aggFn: 'sum', valueExpression: 'rows', where: `pipe_id:"${id}"`, whereLanguage: 'lucene' },
      { threshold: 1, thresholdType: 'below' },
      'quiet',
    );
    // Rows every few seconds until the alert has evaluated a minute with rows (a new alert starts
    // with the last minute, which may have had none yet).
    await waitFor(
      'a minute with rows evaluated',
      async () => {
        await trickle();
        const { data } = await v2('GET', `/alerts/${alert.id}/history`);
        return data.some((row: { value: number | null }) => (row.value ?? 0) >= 1);
      },
      180_000,
      3_000,
    );
    const stoppedAt = receiver.received.length;
    await kafka.shutdown();
    await waitFor(
      'the alert to fire',
      async () => notified('quiet', 'ALERT', stoppedAt).length > 0,
      180_000,
      500,
    );
    const firedAt = receiver.received.length;
    await kafka.start();
    // Rows again, minute after minute, until the alert resolves.
    await waitFor(
      'the alert to resolve',
      async () => {
        await trickle().catch(() => undefined);
        return notified('quiet', 'OK', firedAt).length > 0;
      },
      240_000,
      5_000,
    );
    // The stopped broker shows in the pipe's states, and its minutes read as not Running (what a
    // "count of minutes not Running" alert counts).
    const states = await sql(
      s,
      `SELECT groupUniqArray(state) AS states FROM _sluice_history.pipe_events WHERE pipe_id = '${id}' AND kind = 'state'`,
    );
    expect(states[0]?.states).toContain('Degraded');
    const [notRunning] = await sql(
      s,
      `SELECT count() AS n FROM _sluice_history.pipe_minutes WHERE pipe_id = '${id}' AND state != 'Running'`,
    );
    expect(Number(notRunning?.n)).toBeGreaterThan(0);
  }, 600_000);

  it('a pipe created with healthAlerts: a bad webhook is a 400 that stores nothing; 1% bad records fire its "bad records above 0" alert', async () => {
    await kafka.createTopic('badly', 1);
    const body = {
      ...kafkaPipe('badly', { brokers: `plaintext://${kafka.bootstrap.plaintext}`, topics: 'badly' }),
      settings: { streaming_max_insert_wait_ms: 500 },
    };
    const pipesBefore = (await s.request({ method: 'GET', url: s.pipesUrl })).json.result.length;
    const refused = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: { ...body, healthAlerts: { webhookId: 'f'.repeat(24) } },
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json.error).toContain('healthAlerts.webhookId');
    expect((await s.request({ method: 'GET', url: s.pipesUrl })).json.result).toHaveLength(pipesBefore);
    const { data: webhook } = await v2('POST', '/webhooks', {
      name: 'badly',
      url: `${receiver.url}/badly`,
      body: '{"state": "{{state}}", "title": "{{title}}"}',
    });
    const created = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: { ...body, healthAlerts: { webhookId: webhook.id, maxLag: 100_000, noRowsFor: '15m' } },
    });
    expect(created.statusCode, created.body).toBe(200);
    const id = created.json.result.id;
    const { dashboardId, alertIds } = created.json.result.healthAlerts;
    expect(alertIds).toHaveLength(4);
    const { data: alerts } = await v2('GET', '/alerts');
    const made = alerts.filter((alert: { dashboard: string }) => alert.dashboard === dashboardId);
    expect(
      made.map((alert: { name: string; interval: string }) => [alert.name, alert.interval]).sort(),
    ).toEqual([
      ['pipe badly: bad records', '1m'],
      ['pipe badly: lag above 100000', '5m'],
      ['pipe badly: minutes Degraded or Failed', '5m'],
      ['pipe badly: no rows for 15m', '15m'],
    ]);
    await produce(
      kafka.connection('plaintext'),
      messages('badly', 0, 1000, (i) => i % 100 === 7),
    );
    const badAlert = async () =>
      notified('badly', 'ALERT').filter((r) => JSON.parse(r.body).title.includes('bad records')).length > 0;
    await waitFor('the bad records alert to fire', badAlert, 180_000, 500);
    const [bad] = await sql(
      s,
      `SELECT sum(bad_records) AS n FROM _sluice_history.pipe_minutes WHERE pipe_id = '${id}'`,
    );
    expect(Number(bad?.n)).toBe(10);
    expect((await statusOf(s, id)).badRecords).toBe(10);
  }, 300_000);
});
