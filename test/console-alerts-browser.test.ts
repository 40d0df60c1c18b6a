import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openPage, type WatchedPage } from './support/browser.js';
import { buildOnce, type Running } from './support/built-cli.js';
import { closeConsole, serveForConsole } from './support/console.js';
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
  /** The /api/v2 answer to a GET with the browser's session cookie, as the console calls it. */
  const sessionGet = async (path: string) => {
    const response = await tab.context.request.get(`${server.url}${path}`);
    return { status: response.status(), body: (await response.json()) as { data: any } };
  };
  const theAlert = async () => {
    const alerts = (await sessionGet('/api/v2/alerts')).body.data as { id: string; name: string }[];
    return alerts.find((a) => a.name === 'too hot');
  };
  /** What the receiver was sent at `path` after its first `from` calls there, as parsed bodies. */
  const bodiesSince = (path: string, from: number) =>
    received(path)
      .slice(from)
      .map((r) => JSON.parse(r.body) as { text: string; state: string });
  const shot = async (name: string) => {
    if (screenshots) await tab.page.screenshot({ path: join(screenshots, `${name}.png`), fullPage: true });
  };
  const nav = (name: string) => tab.page.getByRole('navigation').getByRole('link', { name, exact: true });
  const received = (path: string) => receiver.received.filter((r) => r.path === path);
  /** The alerts API as the console calls it: the page's session cookie and its CSRF token. */
  const v2 = async (method: string, path: string, data?: unknown) => {
    const session = await (await tab.context.request.get('/console/session')).json();
    const response = await tab.context.request.fetch(path, {
      method,
      headers: { 'x-sluice-csrf': session.result.csrfToken },
      ...(data === undefined ? {} : { data }),
    });
    return { status: response.status(), data: (await response.json()).data };
  };
  const shownDashboardId = () => decodeURIComponent(new URL(tab.page.url()).hash.split('/').pop() ?? '');

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
    await closeConsole({ tabs: [tab], browser, server, dir });
    await receiver?.stop();
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

  it('edits, adds and deletes tiles of a dashboard, keeping the other tiles as they were', async () => {
    const { page } = tab;
    const number = (tile: string) => page.locator(`[data-tile="${tile}"] .big-number`);
    await nav('Dashboards').click();
    await page.getByRole('button', { name: 'New dashboard' }).click();
    const created = page.getByRole('form', { name: 'New dashboard' });
    await created.getByLabel('Dashboard name').fill('edits');
    await created.getByLabel('Tile name').fill('all readings');
    await created.getByLabel('Source').selectOption({ label: 'readings' });
    await created.getByLabel('Chart').selectOption('number');
    await created.getByRole('button', { name: 'Create dashboard' }).click();
    await page.getByRole('heading', { name: 'edits', exact: true }).waitFor();
    await expect.poll(() => number('all readings').textContent(), { timeout: 30_000 }).toBe('3');
    const id = shownDashboardId();

    // A second tile, placed below the first: the sum of the lab's temperatures.
    await page.getByRole('button', { name: 'Add tile' }).click();
    let form = page.getByRole('form', { name: 'New tile' });
    await form.getByLabel('Tile name').fill('lab sum');
    await form.getByLabel('Source').selectOption({ label: 'readings' });
    await form.getByLabel('Chart').selectOption('number');
    await form.getByLabel('Aggregate').selectOption('sum');
    await form.getByLabel('Value (column or expression)').fill('temp');
    await form.getByLabel('Filter', { exact: true }).fill('room:lab');
    await form.getByRole('button', { name: 'Add tile' }).click();
    await expect.poll(() => number('lab sum').textContent(), { timeout: 30_000 }).toBe('75');
    const made = (await v2('GET', `/api/v2/dashboards/${id}`)).data;
    expect(made.tiles).toHaveLength(2);
    const [first, second] = made.tiles;
    expect(second).toMatchObject({
      name: 'lab sum',
      x: 0,
      y: first.y + first.h,
      config: {
        displayType: 'number',
        select: [{ aggFn: 'sum', valueExpression: 'temp', where: 'room:lab', whereLanguage: 'lucene' }],
      },
    });

    // The second tile's form is filled from it; a column the table lacks is refused beside the
    // value (the server names tiles[1]), and nothing is saved.
    await page.getByRole('button', { name: 'Edit tile lab sum' }).click();
    form = page.getByRole('form', { name: 'Edit tile lab sum' });
    const value = form.getByLabel('Value (column or expression)');
    await expect(value.inputValue()).resolves.toBe('temp');
    await expect(form.getByLabel('Aggregate').inputValue()).resolves.toBe('sum');
    await expect(form.getByLabel('Filter', { exact: true }).inputValue()).resolves.toBe('room:lab');
    await value.fill('no_such_column');
    await form.getByRole('button', { name: 'Save tile' }).click();
    const valueField = form.locator('.field', { has: page.getByLabel('Value (column or expression)') });
    await valueField.locator('.field-error', { hasText: 'no_such_column' }).waitFor();
    expect(await form.locator('.field-error').count()).toBe(1);
    expect(await form.locator('p.error').count()).toBe(0);
    expect((await v2('GET', `/api/v2/dashboards/${id}`)).data).toEqual(made);

    // The maximum in the hall instead: drawn anew, saved under the same id and place.
    await form.getByLabel('Tile name').fill('hall max');
    await form.getByLabel('Aggregate').selectOption('max');
    await value.fill('temp');
    await form.getByLabel('Filter', { exact: true }).fill('room:hall');
    await form.getByRole('button', { name: 'Save tile' }).click();
    await form.waitFor({ state: 'detached' });
    // At once, not at the tile's next read 30 s on.
    await expect.poll(() => number('hall max').textContent(), { timeout: 10_000 }).toBe('20');
    const edited = (await v2('GET', `/api/v2/dashboards/${id}`)).data;
    expect(edited.tiles[0]).toEqual(first);
    expect(edited.tiles[1]).toEqual({
      ...second,
      name: 'hall max',
      config: {
        displayType: 'number',
        sourceId: second.config.sourceId,
        select: [{ aggFn: 'max', valueExpression: 'temp', where: 'room:hall', whereLanguage: 'lucene' }],
      },
    });

    // An alert on the first tile: the question says it goes with the tile; Cancel keeps both.
    const hook = await v2('POST', '/api/v2/webhooks', { name: 'tile edits', url: `${receiver.url}/edits` });
    const alert = await v2('POST', '/api/v2/alerts', {
      name: 'many readings',
      interval: '1h',
      thresholdType: 'above',
      threshold: 1000,
      source: 'tile',
      dashboardId: id,
      tileId: first.id,
      channel: { type: 'webhook', webhookId: hook.data.id },
    });
    expect(alert.status).toBe(200);
    await page.getByRole('button', { name: 'Delete tile all readings' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete tile' });
    await dialog.getByText('The 1 alert on it is deleted with it.').waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect((await v2('GET', `/api/v2/dashboards/${id}`)).data).toEqual(edited);
    await page.getByRole('button', { name: 'Delete tile all readings' }).click();
    await dialog.getByRole('button', { name: 'Delete tile' }).click();
    await page.locator('[data-tile="all readings"]').waitFor({ state: 'detached' });
    expect((await v2('GET', `/api/v2/dashboards/${id}`)).data.tiles).toEqual([edited.tiles[1]]);
    expect((await v2('GET', `/api/v2/alerts/${alert.data.id}`)).status).toBe(404);
    // Gone, so the alert made later in the console picks the on-call webhook, the only one.
    expect((await v2('DELETE', `/api/v2/webhooks/${hook.data.id}`)).status).toBe(200);

    // The one refused request was the column on purpose; the later tests count their own.
    expect(tab.problems.filter((p) => !p.includes('status of 400'))).toEqual([]);
    expect(tab.problems.filter((p) => p.includes('status of 400'))).toHaveLength(1);
    tab.problems.length = 0;
  });

  it('renames a dashboard and deletes it after confirmation', async () => {
    const { page } = tab;
    const id = shownDashboardId();
    const before = (await v2('GET', `/api/v2/dashboards/${id}`)).data;
    expect(before.name).toBe('edits');
    await page.getByRole('button', { name: 'Rename' }).click();
    const form = page.getByRole('form', { name: 'Rename dashboard' });
    await form.getByLabel('Dashboard name').fill('edited');
    await form.getByRole('button', { name: 'Save name' }).click();
    await page.getByRole('heading', { name: 'edited', exact: true }).waitFor();
    expect((await v2('GET', `/api/v2/dashboards/${id}`)).data).toEqual({ ...before, name: 'edited' });

    await page.getByRole('button', { name: 'Delete dashboard edited' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete dashboard' });
    await dialog.getByText('No alert is on its tiles.').waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect((await v2('GET', `/api/v2/dashboards/${id}`)).status).toBe(200);
    await page.getByRole('button', { name: 'Delete dashboard edited' }).click();
    await dialog.getByRole('button', { name: 'Delete dashboard' }).click();
    await page.getByRole('heading', { name: 'Dashboards', exact: true }).waitFor();
    await page.locator('li[data-dashboard="lab"]').waitFor();
    expect(await page.locator('li[data-dashboard="edited"]').count()).toBe(0);
    expect((await v2('GET', `/api/v2/dashboards/${id}`)).status).toBe(404);
    const names = (await v2('GET', '/api/v2/dashboards')).data.map((d: { name: string }) => d.name);
    expect(names.sort()).toEqual(['lab', 'rooms', 'trend']);
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
    // Up to a minute for the window with the hot reading to end, and 150 s for it to be evaluated.
  }, 240_000);

  it("edits the alert's threshold, with the API's field error beside the field", async () => {
    const { page } = tab;
    const seen = tab.problems.length;
    const before = await theAlert();
    expect(before).toBeDefined();
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const form = page.getByRole('form', { name: 'Edit alert too hot' });
    // Filled with the alert as it is.
    await expect(form.getByLabel('Alert name').inputValue()).resolves.toBe('too hot');
    await expect(form.getByLabel('Interval').inputValue()).resolves.toBe('1m');
    const threshold = form.getByLabel('Threshold', { exact: true });
    await expect(threshold.inputValue()).resolves.toBe('1');
    // Below the minimum of 0: the server's 400 shows beside the threshold, and nothing changes.
    await threshold.fill('-1');
    await form.getByRole('button', { name: 'Save alert' }).click();
    const thresholdField = form.locator('.field', { has: page.getByLabel('Threshold', { exact: true }) });
    await expect(thresholdField.locator('.field-error').textContent()).resolves.toMatch(/0/);
    expect((await sessionGet(`/api/v2/alerts/${before?.id}`)).body.data.threshold).toBe(1);
    await threshold.fill('2');
    await form.getByRole('button', { name: 'Save alert' }).click();
    await form.waitFor({ state: 'detached' });
    await page.getByText('above 2 per 1m').waitFor();
    const after = (await sessionGet(`/api/v2/alerts/${before?.id}`)).body.data;
    expect(after).toMatchObject({
      name: 'too hot',
      threshold: 2,
      interval: '1m',
      thresholdType: 'above',
      source: 'tile',
      tileId: (before as any).tileId,
      dashboard: (before as any).dashboard,
      channel: (before as any).channel,
    });
    expect(after.silenced).toBeUndefined();
    expect(tab.problems.slice(seen)).toHaveLength(1);
    expect(tab.problems.slice(seen)[0]).toContain('status of 400');
  });

  it('silences the alert: it is still evaluated, and notifies no one', async () => {
    const { page } = tab;
    const seen = tab.problems.length;
    const alert = await theAlert();
    await page.getByLabel('Silence for').selectOption({ label: '1 hour' });
    const asked = Date.now();
    await page.getByRole('button', { name: 'Silence', exact: true }).click();
    await page.getByText(/^Silenced until .* by console \(you\)/).waitFor();
    const silenced = (await sessionGet(`/api/v2/alerts/${alert?.id}`)).body.data.silenced;
    const until = new Date(silenced.until).getTime();
    expect(until).toBeGreaterThanOrEqual(asked + 3_600_000 - 5_000);
    expect(until).toBeLessThanOrEqual(Date.now() + 3_600_000 + 5_000);
    await page.getByRole('button', { name: 'Unsilence' }).waitFor();

    // Each change decided before the silence was sent: once the receiver's last notice of this
    // alert says the state it is in, the notices of those changes have arrived; from here on,
    // nothing may.
    const before = (await sessionGet(`/api/v2/alerts/${alert?.id}`)).body.data.state as string;
    const lastNotice = () =>
      bodiesSince('/hook', 0)
        .filter((b) => b.text.startsWith('too hot '))
        .at(-1);
    await expect.poll(() => lastNotice()?.state, { timeout: 30_000 }).toBe(before);
    const from = received('/hook').length;
    // The next window changes the state, which notifies at once unless silenced: from ALERT, a
    // window without hot readings resolves it; from OK, three hot ones (the threshold is 2 now)
    // fire it.
    if (before === 'OK')
      await sql("INSERT INTO readings (room, temp) VALUES ('lab', 50), ('lab', 51), ('lab', 52)");
    await expect
      .poll(async () => (await sessionGet(`/api/v2/alerts/${alert?.id}`)).body.data.state, {
        timeout: 150_000,
        interval: 2_000,
      })
      .toBe(before === 'OK' ? 'ALERT' : 'OK');
    const historyOf = async () => (await sessionGet(`/api/v2/alerts/${alert?.id}/history`)).body.data;
    const history = await historyOf();
    expect(history[0]).toMatchObject({ state: before === 'OK' ? 'ALERT' : 'OK', threshold: 2 });
    // Unsilenced, the change is sent in the tick that decided it, right after the evaluation. Once
    // the next window is evaluated too (a minute of ticks later, each sending what is due), a notice
    // of the change would have come: nothing came.
    const changedUntil = Date.parse(history[0].windowEnd);
    await expect
      .poll(async () => Date.parse((await historyOf())[0]?.windowEnd), { timeout: 90_000, interval: 2_000 })
      .toBeGreaterThan(changedUntil);
    expect(bodiesSince('/hook', from)).toEqual([]);

    // The list says it is silenced.
    await nav('Alerts').click();
    await page.locator('tr[data-alert="too hot"] .state.silenced').waitFor();
    expect(tab.problems.slice(seen)).toEqual([]);
  }, 300_000);

  it('unsilences the alert', async () => {
    const { page } = tab;
    const seen = tab.problems.length;
    const alert = await theAlert();
    await page.getByRole('link', { name: 'too hot' }).click();
    await page.getByRole('button', { name: 'Unsilence' }).click();
    await page.getByRole('button', { name: 'Silence', exact: true }).waitFor();
    await expect(page.getByText(/^Silenced until/).count()).resolves.toBe(0);
    expect((await sessionGet(`/api/v2/alerts/${alert?.id}`)).body.data.silenced).toBeUndefined();
    await nav('Alerts').click();
    await page.locator('tr[data-alert="too hot"] .state').first().waitFor();
    await expect(page.locator('tr[data-alert="too hot"] .state.silenced').count()).resolves.toBe(0);
    expect(tab.problems.slice(seen)).toEqual([]);
  });

  it("edits a webhook's name and URL, replacing its headers only as entered", async () => {
    const { page } = tab;
    const seen = tab.problems.length;
    await nav('Webhooks').click();
    await page.locator('tr[data-webhook="on-call"]').getByRole('button', { name: 'Edit' }).click();
    const form = page.getByRole('form', { name: 'Edit webhook on-call' });
    await expect(form.getByLabel('Webhook name').inputValue()).resolves.toBe('on-call');
    await expect(form.getByLabel(/Body template/).inputValue()).resolves.toContain('{{title}}');
    await form.getByLabel('Webhook name').fill('pager');
    await form.getByLabel('URL').fill(`${receiver.url}/pager`);
    // The headers cannot be shown: with none entered, saving needs the box that says they go.
    await form.getByText(/saving replaces them with what is entered below/).waitFor();
    const removeBox = form.getByLabel(/Save with no headers and no query parameters/);
    await form.getByRole('button', { name: 'Save webhook' }).click();
    const missing = (box: unknown) => (box as { validity: { valueMissing: boolean } }).validity.valueMissing;
    await expect(removeBox.evaluate(missing)).resolves.toBe(true);
    const hooks = async () =>
      (await sessionGet('/api/v2/webhooks')).body.data as { id: string; name: string; url: string }[];
    expect((await hooks()).map((w) => w.name)).toEqual(['on-call']);
    await form.getByLabel(/Headers/).fill('X-Receiver-Secret: shh2');
    await expect(removeBox.count()).resolves.toBe(0);
    await form.getByRole('button', { name: 'Save webhook' }).click();
    await form.waitFor({ state: 'detached' });
    const row = page.locator('tr[data-webhook="pager"]');
    await row.waitFor();
    expect(await hooks()).toMatchObject([{ name: 'pager', url: `${receiver.url}/pager` }]);
    await row.getByRole('button', { name: 'Send test' }).click();
    await row.getByText('Delivered (200)').waitFor();
    expect(received('/pager')).toHaveLength(1);
    expect(received('/pager')[0]?.headers['x-receiver-secret']).toBe('shh2');
    expect(JSON.parse(received('/pager')[0]?.body ?? '')).toEqual({
      text: 'Test notification from Sluice to pager',
      state: 'TEST',
    });
    // Deleting it is refused while an alert notifies it, and the dialog says so first.
    await row.getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete webhook' });
    await dialog.getByText(/The alert too hot notifies it\. Sluice does not delete a webhook/).waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect(tab.problems.slice(seen)).toEqual([]);
  });

  it('deletes the alert after the confirmation (Cancel keeps it)', async () => {
    const { page } = tab;
    const seen = tab.problems.length;
    const alert = await theAlert();
    await nav('Alerts').click();
    await page.getByRole('link', { name: 'too hot' }).click();
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete alert' });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect((await sessionGet(`/api/v2/alerts/${alert?.id}`)).status).toBe(200);
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await dialog.getByRole('button', { name: 'Delete alert' }).click();
    await page.getByRole('heading', { name: 'Alerts' }).waitFor();
    await page.getByText('No alerts yet.').waitFor();
    expect((await sessionGet(`/api/v2/alerts/${alert?.id}`)).status).toBe(404);
    expect(tab.problems.slice(seen)).toEqual([]);
  });

  it('deletes a webhook no alert notifies after the confirmation', async () => {
    const { page } = tab;
    const seen = tab.problems.length;
    await nav('Webhooks').click();
    const row = page.locator('tr[data-webhook="pager"]');
    await row.getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete webhook' });
    await dialog.getByText('No alert notifies it.').waitFor();
    await dialog.getByRole('button', { name: 'Delete webhook' }).click();
    await page.getByText('No webhooks yet: alerts notify webhooks.').waitFor();
    expect((await sessionGet('/api/v2/webhooks')).body.data).toEqual([]);
    expect(tab.problems.slice(seen)).toEqual([]);
  });
});
