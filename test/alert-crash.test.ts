import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stopChild } from './support/child.js';
import { sluiceServe } from './support/cli.js';
import { Receiver } from './support/receiver.js';
import { BOOTSTRAP_KEY_ID, BOOTSTRAP_KEY_SECRET, BOOTSTRAP_TOKEN, basic } from './support/sluice.js';
import { waitFor } from './support/wait.js';

/**
 * A real `sluice serve` with its alert timer on, killed with SIGKILL after an alert was decided
 * and while its webhook call is in flight: the notification is delivered after the restart, by
 * the start-up delivery alone (the second process ticks only once an hour).
 */
describe('alert notifications survive a crash (a real server process, killed with SIGKILL)', () => {
  const dirs: string[] = [];
  const receiver = new Receiver();
  afterAll(async () => {
    await receiver.stop();
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it('a decision written before the kill is sent after the restart', async () => {
    await receiver.start();
    receiver.held.add('/hook');
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-alert-crash-'));
    dirs.push(dataDir);
    const env = {
      SLUICE_DATA_DIR: dataDir,
      SLUICE_PORT: '0',
      SLUICE_LOG_LEVEL: 'warn',
      SLUICE_RATE_LIMIT: '0',
      SLUICE_ALLOW_PRIVATE_WEBHOOKS: 'true',
      SLUICE_ALERT_TICK_SECONDS: '1',
      SLUICE_BOOTSTRAP_KEY_ID: BOOTSTRAP_KEY_ID,
      SLUICE_BOOTSTRAP_KEY_SECRET: BOOTSTRAP_KEY_SECRET,
      SLUICE_BOOTSTRAP_ACCESS_TOKEN: BOOTSTRAP_TOKEN,
    };
    let server = await sluiceServe(env);
    const call = async (path: string, body: unknown, auth: string) => {
      const response = await fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const json = (await response.json()) as any;
      if (!response.ok) throw new Error(`${path}: ${JSON.stringify(json)}`);
      return json;
    };
    const key = basic(BOOTSTRAP_KEY_ID, BOOTSTRAP_KEY_SECRET);
    const bearer = `Bearer ${BOOTSTRAP_TOKEN}`;
    const orgs = await (
      await fetch(`${server.url}/v1/organizations`, { headers: { authorization: key } })
    ).json();
    const org = (orgs as any).result[0].id;
    const services = await (
      await fetch(`${server.url}/v1/organizations/${org}/services`, { headers: { authorization: key } })
    ).json();
    const service = (services as any).result[0].id;
    const query = (sql: string) => call(`/v1/organizations/${org}/services/${service}/query`, { sql }, key);
    await query('CREATE DATABASE app');
    await query("CREATE TABLE app.events (ts DateTime('UTC')) ENGINE = MergeTree ORDER BY ts");
    // Rows over the last ten minutes: every closed one-minute window of them breaks the threshold.
    await query("INSERT INTO app.events SELECT now('UTC') - number FROM numbers(600)");
    const source = (
      await call(
        '/api/v2/sources',
        {
          name: 'events',
          kind: 'log',
          serviceId: service,
          from: { databaseName: 'app', tableName: 'events' },
          timestampValueExpression: 'ts',
        },
        bearer,
      )
    ).data;
    const tile = { name: 'n', x: 0, y: 0, w: 1, h: 1 };
    const config = { displayType: 'number', sourceId: source.id, select: [{ aggFn: 'count' }] };
    const dashboard = (await call('/api/v2/dashboards', { name: 'd', tiles: [{ ...tile, config }] }, bearer))
      .data;
    const webhook = (await call('/api/v2/webhooks', { name: 'w', url: `${receiver.url}/hook` }, bearer)).data;
    await call(
      '/api/v2/alerts',
      {
        threshold: 1,
        interval: '1m',
        thresholdType: 'above',
        source: 'tile',
        dashboardId: dashboard.id,
        tileId: dashboard.tiles[0].id,
        channel: { type: 'webhook', webhookId: webhook.id },
      },
      bearer,
    );
    // The timer decided and the first call is in flight (held unanswered): kill the process now.
    await waitFor('the first webhook call', async () => (receiver.received.length > 0 ? true : undefined));
    server.child.kill('SIGKILL');
    await new Promise((resolve) => server.child.once('exit', resolve));
    const key0 = receiver.received[0]?.headers['idempotency-key'];
    expect(key0).toBeDefined();

    receiver.held.delete('/hook');
    server = await sluiceServe({ ...env, SLUICE_ALERT_TICK_SECONDS: '3600' });
    try {
      await waitFor('the notification after the restart', async () =>
        receiver.received.length > 1 ? true : undefined,
      );
      // The same notification (the same key), sent by the new process at its start.
      expect(receiver.received[1]?.headers['idempotency-key']).toBe(key0);
      expect(JSON.parse(receiver.received[1]?.body ?? '{}').state).toBe('ALERT');
    } finally {
      await stopChild(server.child);
    }
  });
});
