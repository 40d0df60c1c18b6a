import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openPage, type WatchedPage } from './support/browser.js';
import { buildOnce, type Running, stop } from './support/built-cli.js';
import { type Key, serveForConsole, signIn } from './support/console.js';
import { fillTable, openDatabase, type RunningPostgres, startPostgres } from './support/postgres.js';
import { waitFor } from './support/wait.js';

/**
 * The create wizard for a PostgreSQL pipe in a real browser, against a real PostgreSQL server and
 * Sluice started as a user starts it: the server's tables are listed with the problems a pipe
 * would meet, a refused password shows beside the credentials, and the picked table replicates.
 */
describe('the console wizard for PostgreSQL', () => {
  let dir = '';
  let server: Running;
  let postgres: RunningPostgres;
  let client: pg.Client;
  let port = 0;
  let browser: Browser;
  let tab: WatchedPage;
  let auth = '';
  let pipesPath = '';

  beforeAll(async () => {
    buildOnce();
    postgres = await startPostgres();
    const shop = await openDatabase(postgres, 'shop');
    client = shop.client;
    port = shop.port;
    await fillTable(client, 'orders', 100);
    await client.query('CREATE TABLE logs (at timestamptz, line text)');
    dir = await mkdtemp(join(tmpdir(), 'sluice-console-pg-'));
    let key: Key;
    ({ server, admin: key } = await serveForConsole(join(dir, 'data'), {
      // The test's PostgreSQL listens on this machine.
      SLUICE_ALLOW_PRIVATE_SOURCES: 'true',
    }));
    auth = `Basic ${Buffer.from(`${key.id}:${key.secret}`).toString('base64')}`;
    const get = async (path: string) =>
      (
        (await (await fetch(`${server.url}${path}`, { headers: { authorization: auth } })).json()) as {
          result: any;
        }
      ).result;
    const org = (await get('/v1/organizations'))[0].id as string;
    const service = (await get(`/v1/organizations/${org}/services`))[0].id as string;
    pipesPath = `/v1/organizations/${org}/services/${service}/pipes`;
    browser = await launchBrowser();
    tab = await openPage(browser, server.url);
    await signIn(tab, key);
    await tab.page.getByRole('heading', { name: 'Pipes' }).waitFor();
  }, 240_000);

  afterAll(async () => {
    await tab?.context.close();
    await browser?.close();
    if (server) await stop(server.child);
    await client?.end().catch(() => undefined);
    await postgres?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("lists the server's tables with their problems, and the picked table replicates", async () => {
    const { page } = tab;
    await page.getByRole('link', { name: 'New pipe' }).click();
    await page.getByRole('button', { name: /^PostgreSQL/ }).click();
    await page.getByLabel('Host').fill('127.0.0.1');
    await page.getByLabel('Port').fill(String(port));
    await page.getByLabel('Database').fill('shop');
    await page.getByLabel('User name').fill('postgres');
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByLabel('Connect without TLS').check();
    await page.getByRole('button', { name: 'Check connection and preview' }).click();
    // The server's refusal, beside the credentials it names.
    await page
      .locator('.field', { has: page.getByLabel('Password') })
      .locator('.field-error', { hasText: 'refused the credentials' })
      .waitFor();
    await page.getByLabel('Password').fill('postgres');
    await page.getByRole('button', { name: 'Check connection and preview' }).click();
    const logs = page.locator('tr[data-table="public.logs"]');
    const orders = page.locator('tr[data-table="public.orders"]');
    // A table without a key cannot replicate its changes: said before anything is created.
    await logs.locator('.problems', { hasText: 'no primary key' }).waitFor();
    await expect(orders.locator('.problems').textContent()).resolves.toBe('none');
    await expect(orders.locator('td').nth(3).textContent()).resolves.toBe('id');
    await orders.getByRole('checkbox').check();
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByLabel('Pipe name').fill('shop');
    await page.getByLabel('Database').fill('mirror_shop');
    await page.getByRole('button', { name: 'Next' }).click();
    const body = JSON.parse((await page.locator('pre[data-part="body"]').textContent()) ?? '{}');
    expect(body).toMatchObject({
      name: 'shop',
      source: {
        postgres: {
          host: '127.0.0.1',
          port,
          database: 'shop',
          disableTls: true,
          credentials: { username: 'postgres', password: '********' },
          settings: { replicationMode: 'cdc' },
          tableMappings: [{ sourceSchemaName: 'public', sourceTable: 'orders', targetTable: 'orders' }],
        },
      },
      destination: { database: 'mirror_shop' },
    });
    await page.getByRole('button', { name: 'Create pipe' }).click();
    await page.getByRole('heading', { name: 'shop' }).waitFor();
    await page.locator('.title-row .state', { hasText: 'Running' }).waitFor({ timeout: 120_000 });
    // The snapshot's rows, then a change, in the target.
    const count = async () => {
      const response = await fetch(`${server.url}${pipesPath.replace('/pipes', '/query')}`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: JSON.stringify({
          sql: 'SELECT count() AS n FROM mirror_shop.orders FINAL WHERE _pipe_is_deleted = 0',
        }),
      });
      return Number(((await response.json()) as { result?: { rows: { n: number }[] } }).result?.rows[0]?.n);
    };
    await waitFor('the snapshot in the target', async () => (await count()) === 100, 120_000);
    await client.query("INSERT INTO orders VALUES (101, 'new')");
    await waitFor('the change in the target', async () => (await count()) === 101, 120_000);
    expect(tab.problems.filter((p) => !p.includes('status of 400'))).toEqual([]);
  }, 300_000);
});
