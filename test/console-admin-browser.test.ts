import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openPage, type WatchedPage } from './support/browser.js';
import { buildOnce, type Running } from './support/built-cli.js';
import { apiOf, closeConsole, serveForConsole, signIn } from './support/console.js';

/**
 * The console's Admin area in a real browser, against Sluice started as a user starts it
 * (bin/sluice.js serve on a new data directory): an admin makes a read-only key and a team's
 * access token (each secret shown once), the read-only key sees the pages without any action it
 * may not take (and the server refuses them anyway), revoking a key signs its open session out,
 * and the operator's admin makes an organization whose first key is shown once.
 */
describe('the console Admin area in a browser', () => {
  let dir = '';
  let server: Running;
  let browser: Browser;
  let admin = { id: '', secret: '' };
  let viewer = { id: '', secret: '' };
  let org = '';
  let adminTab: WatchedPage;
  let viewerTab: WatchedPage;
  const pages: WatchedPage[] = [];

  const call = (...args: Parameters<ReturnType<typeof apiOf>>) => apiOf(server, () => admin)(...args);
  const open = async () => {
    const watched = await openPage(browser, server.url);
    pages.push(watched);
    return watched;
  };
  const adminPage = async (page: Page, name: string) => {
    if ((await page.getByRole('navigation', { name: 'Admin pages' }).count()) === 0)
      await page.getByRole('link', { name: 'Admin', exact: true }).click();
    await page.getByRole('navigation', { name: 'Admin pages' }).getByRole('link', { name }).click();
    await page.locator('.subnav a.active', { hasText: name }).waitFor();
  };
  /** Everything the page shows: its text and the values of its fields. */
  const shown = async (page: Page) =>
    [
      await page.locator('body').innerText(),
      ...(await page
        .locator('input, textarea')
        .evaluateAll((fields) => fields.map((f) => (f as { value: string }).value))),
    ].join('\n');
  const actionButtons = (page: Page) => page.getByRole('button', { name: /^(Create|Revoke)/ });
  /** The session's CSRF token, and a change sent with it as the page would send it. */
  const fromSession = (page: Page, path: string, body: unknown) =>
    page.evaluate(
      async ({ path, body }) => {
        const session = (await (await fetch('/console/session')).json()) as { result: { csrfToken: string } };
        const response = await fetch(path, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-sluice-csrf': session.result.csrfToken },
          body: JSON.stringify(body),
        });
        return { status: response.status, body: (await response.json()) as { code: string } };
      },
      { path, body },
    );

  beforeAll(async () => {
    buildOnce();
    dir = await mkdtemp(join(tmpdir(), 'sluice-console-admin-'));
    const dataDir = join(dir, 'data');
    await mkdir(dataDir, { recursive: true });
    ({ server, admin } = await serveForConsole(dataDir));
    org = (await call('GET', '/v1/organizations')).body.result[0].id as string;
    browser = await launchBrowser();
  }, 240_000);

  afterAll(() => closeConsole({ tabs: pages, browser, server, dir }));

  it('an admin creates a read-only key and a team with a token: each secret is shown once', async () => {
    adminTab = await open();
    const { page } = adminTab;
    await signIn(adminTab, admin);
    await page.getByRole('link', { name: 'Admin', exact: true }).click();
    await page.getByRole('heading', { name: 'Organization', exact: true }).waitFor();
    await page.locator('.facts code', { hasText: org }).waitFor();

    await adminPage(page, 'API keys');
    await page.getByLabel('Key name').fill('viewer');
    await page.getByLabel('Role').selectOption('read-only');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = await page.getByLabel('Secret of key viewer value').inputValue();
    await page
      .getByRole('status', { name: 'Secret of key viewer' })
      .getByText('it will not be shown again')
      .waitFor();
    const listed = (await call('GET', `/v1/organizations/${org}/keys`)).body.result as {
      id: string;
      name: string;
      role: string;
    }[];
    const made = listed.find((k) => k.name === 'viewer');
    expect(made?.role).toBe('read-only');
    viewer = { id: made?.id ?? '', secret };
    // The secret shown is the key's: it authenticates.
    expect((await call('GET', '/v1/organizations', undefined, viewer)).status).toBe(200);
    expect(await shown(page)).toContain(secret);
    await page.getByRole('button', { name: 'Done' }).click();
    const row = page.locator('tbody tr', { hasText: viewer.id });
    await expect(row.locator('td').nth(2).textContent()).resolves.toBe('read-only');
    expect(await shown(page)).not.toContain(secret);
    // A second look (the page read again from the server) shows no secret either.
    await page.reload();
    await page.locator('tbody tr', { hasText: viewer.id }).waitFor();
    expect(await shown(page)).not.toContain(secret);

    await adminPage(page, 'Teams and tokens');
    await page.getByLabel('Team name').fill('sre');
    await page.getByRole('button', { name: 'Create team' }).click();
    await page.getByRole('link', { name: 'sre', exact: true }).click();
    await page.getByRole('heading', { name: 'Team sre: access tokens' }).waitFor();
    await page.getByText('No access tokens for this team yet.').waitFor();
    await page.getByLabel('User', { exact: true }).fill('alice');
    await page.getByLabel('Token name (optional)').fill('laptop');
    await page.getByRole('button', { name: 'Create token' }).click();
    const token = await page.getByLabel('Access token of alice value').inputValue();
    expect((await call('GET', '/api/v2/alerts', undefined, { bearer: token })).status).toBe(200);
    expect(await shown(page)).toContain(token);
    await page.getByRole('button', { name: 'Done' }).click();
    const tokenRow = page.locator('tbody tr', { hasText: 'alice' });
    await expect(tokenRow.locator('td').nth(1).textContent()).resolves.toBe('laptop');
    expect(await shown(page)).not.toContain(token);
    await page.reload();
    await page.locator('tbody tr', { hasText: 'alice' }).waitFor();
    expect(await shown(page)).not.toContain(token);
    expect(adminTab.problems).toEqual([]);
  });

  it('a read-only key sees the Admin pages without any create or revoke, and the server refuses a create anyway', async () => {
    viewerTab = await open();
    const { page } = viewerTab;
    await signIn(viewerTab, viewer);
    await page.locator('.who .role', { hasText: 'read-only' }).waitFor();
    await adminPage(page, 'Organization');
    await page.locator('.facts code', { hasText: org }).waitFor();
    await page.getByText('needs an admin key of the operator organization').waitFor();
    await expect(page.getByRole('heading', { name: 'All organizations' }).count()).resolves.toBe(0);
    expect(await actionButtons(page).count()).toBe(0);

    await adminPage(page, 'Services');
    await page.getByRole('cell', { name: 'default', exact: true }).waitFor();
    await page.getByText('An admin key is needed to create services').waitFor();
    expect(await actionButtons(page).count()).toBe(0);

    await adminPage(page, 'API keys');
    await page.getByText('An admin key is needed to list, create and revoke API keys').waitFor();
    expect(await actionButtons(page).count()).toBe(0);
    expect(await page.locator('table').count()).toBe(0);

    await adminPage(page, 'Teams and tokens');
    await page.getByRole('cell', { name: 'sre', exact: true }).waitFor();
    await page.getByText('An admin key is needed to create teams').waitFor();
    expect(await actionButtons(page).count()).toBe(0);
    await expect(page.getByRole('link', { name: 'sre', exact: true }).count()).resolves.toBe(0);

    // The same session, asking anyway (cookie and CSRF token as the page would send them).
    const key = await fromSession(page, `/v1/organizations/${org}/keys`, { name: 'sneaky', role: 'admin' });
    expect(key).toEqual({ status: 403, body: expect.objectContaining({ code: 'SLUICE_ERR_FORBIDDEN' }) });
    const team = await fromSession(page, `/v1/organizations/${org}/teams`, { name: 'sneaky' });
    expect(team.status).toBe(403);
    const keys = (await call('GET', `/v1/organizations/${org}/keys`)).body.result as { name: string }[];
    expect(keys.map((k) => k.name)).not.toContain('sneaky');
    expect(viewerTab.problems.filter((p) => !p.includes('status of 403'))).toEqual([]);
  });

  it('the admin revokes the read-only key after a confirmation, and its open session is signed out on its next request', async () => {
    const { page } = adminTab;
    await adminPage(page, 'API keys');
    const row = page.locator('tbody tr', { hasText: viewer.id });
    await row.getByRole('button', { name: 'Revoke', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke key' });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect((await call('GET', '/v1/organizations', undefined, viewer)).status).toBe(200);
    await row.getByRole('button', { name: 'Revoke', exact: true }).click();
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await row.getByRole('button', { name: 'Revoke', exact: true }).waitFor({ state: 'detached' });
    await expect(row.locator('td').nth(4).textContent()).resolves.not.toBe('–');
    expect((await call('GET', '/v1/organizations', undefined, viewer)).status).toBe(401);

    // The viewer's tab still shows the Admin pages until it next asks the server.
    const { page: viewerPage } = viewerTab;
    await expect(viewerPage.getByRole('button', { name: 'Sign in' }).count()).resolves.toBe(0);
    await viewerPage
      .getByRole('navigation', { name: 'Admin pages' })
      .getByRole('link', { name: 'Services' })
      .click();
    await viewerPage.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(
      viewerTab.problems.filter((p) => !p.includes('status of 403') && !p.includes('status of 401')),
    ).toEqual([]);
    expect(adminTab.problems).toEqual([]);
  });

  it('the operator admin creates an organization and sees its first key once; that key is no operator', async () => {
    const { page } = adminTab;
    await adminPage(page, 'Organization');
    await page.getByRole('heading', { name: 'All organizations' }).waitFor();
    await page.getByRole('cell', { name: 'default', exact: true }).waitFor();
    // The server's message for a field shows beside that field.
    await page.getByLabel('Organization name').fill('x'.repeat(300));
    await page.getByRole('button', { name: 'Create organization' }).click();
    await page
      .locator('.field', { has: page.getByLabel('Organization name') })
      .locator('.field-error')
      .waitFor();
    await page.getByLabel('Organization name').fill('acme');
    await page.getByRole('button', { name: 'Create organization' }).click();
    const value = await page.getByLabel('First admin key of acme value').inputValue();
    await page
      .getByRole('status', { name: 'First admin key of acme' })
      .getByText('it will not be shown again')
      .waitFor();
    const [id = '', secret = ''] = value.split(':');
    const acmeKey = { id, secret };
    const seen = await call('GET', '/v1/organizations', undefined, acmeKey);
    expect(seen.status).toBe(200);
    expect(seen.body.result.map((o: { name: string }) => o.name)).toEqual(['acme']);
    expect(await shown(page)).toContain(secret);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('cell', { name: 'acme', exact: true }).waitFor();
    expect(await shown(page)).not.toContain(secret);
    await page.reload();
    await page.getByRole('cell', { name: 'acme', exact: true }).waitFor();
    expect(await shown(page)).not.toContain(secret);
    expect(adminTab.problems.filter((p) => !p.includes('status of 400'))).toEqual([]);

    // acme's admin: an admin, but not of the operator organization, so no organizations form; and
    // revoking its own session's key signs it out.
    const acmeTab = await open();
    const acme = acmeTab.page;
    await signIn(acmeTab, acmeKey);
    await acme.getByRole('link', { name: 'Admin', exact: true }).click();
    await acme.locator('.facts dd', { hasText: 'acme' }).waitFor();
    await acme.getByText('needs an admin key of the operator organization').waitFor();
    await expect(acme.getByRole('button', { name: 'Create organization' }).count()).resolves.toBe(0);
    await adminPage(acme, 'API keys');
    const own = acme.locator('tbody tr', { hasText: `${acmeKey.id} (this session)` });
    await own.getByRole('button', { name: 'Revoke', exact: true }).click();
    const dialog = acme.getByRole('dialog', { name: 'Revoke key' });
    await dialog.getByText('revoking it signs you out').waitFor();
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await acme.getByRole('button', { name: 'Sign in' }).waitFor();
    expect((await call('GET', '/v1/organizations', undefined, acmeKey)).status).toBe(401);
    expect(acmeTab.problems.filter((p) => !p.includes('status of 401'))).toEqual([]);
  });
});
