import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openPage, type WatchedPage } from './support/browser.js';
import { buildOnce, type Running, stop } from './support/built-cli.js';
import { serveForConsole } from './support/console.js';
import { Receiver } from './support/receiver.js';

/**
 * The console's alerts area in a real browser (Debian's chromium through playwright-core), against
 * Sluice started as a user starts it, ticking alerts every 2 s and allowing webhooks on this
 * machine: a source, dashboards whose tiles are drawn, a webhook and its test send, an alert made
 * on a tile that fires and notifies, and its history. Every page is watched for console errors.
 */
describe('dashboards, webhooks and alerts in the console', () => {
  let dir = '';
  let server: Running;
  let browser: Browser;
  let receiver: Receiver;
  let admin = { id: '', secret: '' };
  let queryPath = '';
  let tab: WatchedPage;
  const screenshots = process.env.SLUICE_SCREENSHOTS;

  const sql = async (text: string) => {
    const response = await fetch(`${server.url}${queryPath}`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${admin.id}:${admin.secret}`).toString('base64')}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ sql: text }),
    });
    expect(response.status, await response.clone().text()).toBe(200);
  };
  const basicGet = async (path: string) => {
    const response = await fetch(`${server.url}${path}`, {
      headers: { authorization: `Basic ${Buffer.from(`${admin.id}:${admin.secret}`).toString('base64')}` },
    });
    return ((await response.json()) as { result: any }).result;
  };
  const shot = async (name: string) => {
    if (screenshots) await tab.page.screenshot({ path: join(screenshots, `${name}.png`), fullPage: true });
  };
  const nav = (name: string) => tab.page.getByRole('navigation').getByRole('link', { name, exact: true });
  const received = (path: string) => receiver.received.filter((r) => r.path.startsWith(path));

  beforeAll(async () => {
    buildOnce();
    receiver = new Receiver();
    await receiver.start();
    dir = await mkdtemp(join(tmpdir(), 'sluice-console-alerts-'));
    ({ server, admin } = await serveForConsole(join(dir, 'data'), {
      SLUICE_ALLOW_PRIVATE_WEBHOOKS: 'true',
      SLUICE_ALERT_TICK_SECONDS: '2',
    }));
    const org = (await basicGet('/v1/organizations'))[0].id as string;
    const service = (await basicGet(`/v1/organizations/${org}/services`))[0].id as string;
    queryPath = `/v1/organizations/${org}/services/${service}/query`;
    // A table with three readings now, two of them hot.
    await sql(
      "CREATE TABLE readings (ts DateTime('UTC') DEFAULT now(), room String, temp Float64) ENGINE = MergeTree ORDER BY ts",
    );
    await sql("INSERT INTO readings (room, temp) VALUES ('lab', 35), ('lab', 40), ('hall', 20)");
    browser = await launchBrowser();
    tab = await openPage(browser, server.url);
  }, 240_000);

  afterAll(async () => {
    await tab?.context.close().catch(() => undefined);
    await browser?.close();
    if (server) await stop(server.child);
    await receiver?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('signs in with the admin key and is offered the alerts area', async () => {
    const { page } = tab;
    await page.goto('/');
    await page.getByLabel('API key id').fill(admin.id);
    await page.getByLabel('API key secret').fill(admin.secret);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Pipes' }).waitFor();
    for (const name of ['Dashboards', 'Alerts', 'Webhooks']) {
      await nav(name).waitFor();
    }
    // Before signing in the console asks for its session, and none is an answer, not an error.
    expect(tab.problems).toEqual([]);
  });

  it('makes a source and dashboards whose tiles are drawn from the tile data', async () => {
    const { page } = tab;
    await nav('Dashboards').click();
    await page.getByText('No dashboards yet.').waitFor();
    // Each service has a built-in source (its pipes' history), so the form opens on asking.
    await page.getByRole('button', { name: 'New source' }).click();
    const source = page.getByRole('form', { name: 'New source' });
    await source.getByLabel('Source name').fill('readings');
    await source.getByLabel('Table').fill('readings');
    await source.getByLabel('Time column or expression').fill('ts');
    await source.getByRole('button', { name: 'Create source' }).click();
    await page.getByText('readings (default.readings)').waitFor();

    // A number: the hot readings of the last hour.
    await page.getByRole('button', { name: 'New dashboard' }).click();
    let form = page.getByRole('form', { name: 'New dashboard' });
    await form.getByLabel('Dashboard name').fill('lab');
    await form.getByLabel('Tile name').fill('hot readings');
    await form.getByLabel('Source').selectOption({ label: 'readings' });
    await form.getByLabel('Chart').selectOption('number');
    await form.getByLabel('Filter', { exact: true }).fill('temp:>30');
    await form.getByRole('button', { name: 'Create dashboard' }).click();
    await page.getByRole('heading', { name: 'lab' }).waitFor();
    await expect(
      page.locator('[data-tile="hot readings"] .big-number').textContent({ timeout: 30_000 }),
    ).resolves.toBe('2');

    // Bars (uPlot's canvas) of the sum of temperatures per room, and a table of the same.
    for (const [name, chart] of [
      ['trend', 'stacked_bar'],
      ['rooms', 'table'],
    ] as const) {
      await nav('Dashboards').click();
      await page.getByRole('button', { name: 'New dashboard' }).click();
      form = page.getByRole('form', { name: 'New dashboard' });
      await form.getByLabel('Dashboard name').fill(name);
      await form.getByLabel('Tile name').fill(`temperature ${name}`);
      await form.getByLabel('Source').selectOption({ label: 'readings' });
      await form.getByLabel('Chart').selectOption(chart);
      await form.getByLabel('Aggregate').selectOption('sum');
      await form.getByLabel('Value (column or expression)').fill('temp');
      await form.getByLabel('Group by (optional)').fill('room');
      await form.getByRole('button', { name: 'Create dashboard' }).click();
      await page.getByRole('heading', { name }).waitFor();
    }
    const table = page.locator('[data-tile="temperature rooms"] table');
    await table.getByRole('cell', { name: 'sum(temp) lab' }).waitFor({ timeout: 30_000 });
    await expect(table.locator('tbody tr').first().locator('td').nth(1).textContent()).resolves.toBe('75');
    await page.getByRole('button', { name: 'Last 7d' }).click();
    await table.getByRole('cell', { name: 'sum(temp) hall' }).waitFor();
    await nav('Dashboards').click();
    await page.getByRole('link', { name: 'trend' }).click();
    await page
      .locator('[data-tile="temperature trend"] [data-chart="bars"] canvas')
      .waitFor({ timeout: 30_000 });
    await shot('dashboard');
    expect(tab.problems).toEqual([]);
  });

  it('makes a webhook to a local receiver and sends it a test', async () => {
    const { page } = tab;
    await nav('Webhooks').click();
    await page.getByRole('button', { name: 'New webhook' }).click();
    const form = page.getByRole('form', { name: 'New webhook' });
    await form.getByLabel('Webhook name').fill('on-call');
    await form.getByLabel('URL').fill(`${receiver.url}/hook`);
    await form.getByLabel(/Body template/).fill('{"text": "{{title}}", "state": "{{state}}"}');
    await form.getByLabel(/Headers/).fill('X-Receiver-Secret: shh');
    await form.getByRole('button', { name: 'Create webhook' }).click();
    const row = page.locator('tr[data-webhook="on-call"]');
    await row.getByRole('button', { name: 'Send test' }).click();
    await row.getByText('Delivered (200)').waitFor();
    expect(received('/hook')).toHaveLength(1);
    expect(received('/hook')[0]?.headers['x-receiver-secret']).toBe('shh');
    expect(JSON.parse(received('/hook')[0]?.body ?? '')).toEqual({
      text: 'Test notification from Sluice to on-call',
      state: 'TEST',
    });
    expect(tab.problems).toEqual([]);
  });

  it('makes an alert on a tile that fires, notifies the receiver, and shows its history', async () => {
    const { page } = tab;
    await nav('Dashboards').click();
    await page.getByRole('link', { name: 'lab', exact: true }).click();
    await page.getByRole('button', { name: 'New alert on hot readings' }).click();
    const form = page.getByRole('form', { name: 'New alert on hot readings' });
    await form.getByLabel('Alert name').fill('too hot');
    await form.getByLabel('Interval').selectOption('1m');
    await form.getByLabel('Threshold type').selectOption('above');
    // Not a number: the server's 400 is shown beside the threshold (the browser logs the 400).
    await form.getByLabel('Threshold', { exact: true }).fill('hot');
    await form.getByRole('button', { name: 'Create alert' }).click();
    await form.locator('.field-error').waitFor();
    await form.getByLabel('Threshold', { exact: true }).fill('1');
    await form.getByRole('button', { name: 'Create alert' }).click();
    await page.getByRole('heading', { name: 'too hot' }).waitFor();
    // Hot readings after the alert exists: its first window to evaluate will hold them.
    await sql("INSERT INTO readings (room, temp) VALUES ('lab', 45)");

    await nav('Alerts').click();
    const row = page.locator('tr[data-alert="too hot"]');
    await row.locator('.alert-alert').waitFor({ timeout: 150_000 });
    await expect.poll(() => received('/hook').length, { timeout: 30_000 }).toBeGreaterThanOrEqual(2);
    expect(JSON.parse(received('/hook')[1]?.body ?? '')).toEqual({
      text: 'too hot is firing',
      state: 'ALERT',
    });
    await row.getByRole('link', { name: 'too hot' }).click();
    await page
      .getByRole('list', { name: 'Alert history timeline' })
      .locator('[data-state="alert"]')
      .first()
      .waitFor();
    await page.getByRole('cell', { name: /vs 1$/ }).first().waitFor();
    await shot('alert');
    // The one refused request was the threshold on purpose.
    expect(tab.problems.filter((p) => !p.includes('status of 400'))).toEqual([]);
    expect(tab.problems.filter((p) => p.includes('status of 400'))).toHaveLength(1);
  });
});
