import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openPage, type WatchedPage } from './support/browser.js';
import { buildOnce, type Running } from './support/built-cli.js';
import { apiOf, closeConsole, type Key, serveForConsole, signIn } from './support/console.js';

const PIPES = 1000;
const name = (i: number) => `pipe ${String(i).padStart(4, '0')}`;

/**
 * The console with 1,000 pipes and a year of a pipe's history (SLUICE_PIPE_HISTORY_DAYS=365), in
 * Debian's chromium against Sluice started as a user starts it. What keeps the pages responsive is
 * what they ask for: the pipes page reads the statuses of the 50 pipes it shows, never all 1,000,
 * and a pipe's day chart reads a day of five-minute points, never the year. The timings are in
 * `npm run bench -- console`; the bounds here only catch a page that hangs.
 */
describe('the console with 1,000 pipes and a year of history', () => {
  let dir = '';
  let server: Running;
  let admin: Key = { id: '', secret: '' };
  let browser: Browser;
  let tab: WatchedPage;
  let pipesPath = '';
  let serviceId = '';
  const call = (method: string, path: string, body?: unknown) =>
    apiOf(server, () => admin)(method, path, body);

  beforeAll(async () => {
    buildOnce();
    dir = await mkdtemp(join(tmpdir(), 'sluice-console-scale-'));
    const dataDir = join(dir, 'data');
    await mkdir(join(dataDir, 'files'), { recursive: true });
    ({ server, admin } = await serveForConsole(dataDir, { SLUICE_PIPE_HISTORY_DAYS: '365' }));
    const org = (await call('GET', '/v1/organizations')).body.result[0].id as string;
    serviceId = (await call('GET', `/v1/organizations/${org}/services`)).body.result[0].id as string;
    pipesPath = `/v1/organizations/${org}/services/${serviceId}/pipes`;
    const query = (sql: string) =>
      call('POST', `/v1/organizations/${org}/services/${serviceId}/query`, { sql });
    expect((await query('CREATE TABLE ones (id Int64) ENGINE = MergeTree ORDER BY id')).status).toBe(200);
    // 1,000 continuous pipes into one table, each watching for files that have not come yet, ten
    // creates at a time.
    for (let i = 0; i < PIPES; i += 10) {
      const made = await Promise.all(
        Array.from({ length: 10 }, (_, j) =>
          call('POST', pipesPath, {
            name: name(i + j),
            source: {
              objectStorage: {
                type: 's3',
                format: 'JSONEachRow',
                url: 'file:///later/*.ndjson',
                isContinuous: true,
              },
            },
            destination: {
              database: 'default',
              table: 'ones',
              managedTable: false,
              columns: [{ name: 'id', type: 'Int64' }],
            },
          }),
        ),
      );
      for (const answer of made) expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    }
    browser = await launchBrowser();
    tab = await openPage(browser, server.url);
  }, 600_000);

  afterAll(() => closeConsole({ tabs: [tab], browser, server, dir }));

  it('the pipes page shows the first 50 of 1,000 with their statuses, asking only for those 50', async () => {
    const { page } = tab;
    const statusAsked = new Set<string>();
    const onRequest = (request: Request) => {
      const match = /\/pipes\/([^/]+)\/status$/.exec(new URL(request.url()).pathname);
      if (match?.[1]) statusAsked.add(match[1]);
    };
    page.on('request', onRequest);
    const started = Date.now();
    await signIn(tab, admin);
    await page.getByText(`Page 1 of ${PIPES / 50} (${PIPES} pipes)`).waitFor();
    // The 50th row shows its status's rows written.
    await page
      .locator(`tr[data-pipe="${name(49)}"] td`)
      .nth(5)
      .getByText('0', { exact: true })
      .waitFor();
    expect(Date.now() - started).toBeLessThan(20_000);
    await expect(page.locator('table.pipes tbody tr').count()).resolves.toBe(50);
    expect(statusAsked.size).toBe(50);
    // The next page asks for the next 50 only.
    await page.getByRole('button', { name: 'Next' }).click();
    await page
      .locator(`tr[data-pipe="${name(99)}"] td`)
      .nth(5)
      .getByText('0', { exact: true })
      .waitFor();
    await expect(page.locator(`tr[data-pipe="${name(49)}"]`).count()).resolves.toBe(0);
    expect(statusAsked.size).toBe(100);
    // The filter reaches the last pipe of the thousand.
    await page.getByLabel('Filter pipes by name').fill('0999');
    await page
      .locator(`tr[data-pipe="${name(999)}"]`)
      .getByText('Running')
      .waitFor();
    await expect(page.locator('table.pipes tbody tr').count()).resolves.toBe(1);
    page.off('request', onRequest);
    expect(statusAsked.size).toBeLessThanOrEqual(101);
    expect(tab.problems).toEqual([]);
  });

  it("a pipe's day chart reads five-minute points of its last day from a year of its history", async () => {
    const { page } = tab;
    const first = (await call('GET', pipesPath)).body.result.find(
      (p: { name: string }) => p.name === name(0),
    ) as { id: string };
    // A year of minutes of the pipe, as the runtime writes them, beside its real history rows.
    const insert = await call('POST', pipesPath.replace(/\/pipes$/, '/query'), {
      sql: `INSERT INTO _sluice_history.pipe_events (at, pipe_id, pipe_name, kind, rows, bytes) SELECT now() - toIntervalMinute(number + 1), '${first.id}', '${name(0)}', 'batch', 600, 60000 FROM numbers(525600) SETTINGS max_partitions_per_insert_block = 1000`,
    });
    expect(insert.status, JSON.stringify(insert.body)).toBe(200);
    const kept = await call('POST', pipesPath.replace(/\/pipes$/, '/query'), {
      sql: `SELECT count() AS n, min(at) < now() - INTERVAL 364 DAY AS year FROM _sluice_history.pipe_events WHERE pipe_id = '${first.id}' AND kind = 'batch'`,
    });
    // Kept: the table's retention is the year the server was started with.
    expect(kept.body.result.rows[0]).toMatchObject({ n: 525600, year: 1 });
    await page.goto(`/#/s/${serviceId}/pipes/${first.id}`);
    await page.getByRole('heading', { name: name(0) }).waitFor();
    const day = page.waitForResponse(
      (r) => r.url().endsWith('/query') && (r.request().postData() ?? '').includes('toStartOfFiveMinutes'),
    );
    await page.getByRole('button', { name: 'Last day' }).click();
    const answer = (await (await day).json()) as { result: { rows: { rps: number }[] } };
    // A day of five-minute points (288, and the one the day's edge cuts), 600 rows a minute each.
    expect(answer.result.rows.length).toBeGreaterThanOrEqual(288);
    expect(answer.result.rows.length).toBeLessThanOrEqual(290);
    expect(answer.result.rows[10]?.rps).toBe(10);
    await page.locator('.chart .u-legend').first().waitFor();
    await page.locator('.chart canvas').first().waitFor();
  });
});
