import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { createSluice } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { ensureHistory } from '../src/pipes/index.js';
import { launchBrowser } from '../test/support/browser.js';
import { objectStoragePipe } from '../test/support/pipes.js';
import { cpuUsage, printTable, serviceEngine, timed } from './support.js';

const RUNS = Number(process.env.BENCH_CONSOLE_RUNS ?? 5);
const PIPES = Number(process.env.BENCH_CONSOLE_PIPES ?? 1000);
const KEY = { id: 'sk_bench', secret: 'bench-secret-0123456789' };

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** Milliseconds of `steps` in a new browser context each run (nothing cached), the median of RUNS. */
async function coldRuns(
  browser: Browser,
  base: string,
  steps: (page: Page) => Promise<void>,
): Promise<number> {
  const times: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const context = await browser.newContext({ baseURL: base, viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    times.push((await timed(() => steps(page))) * 1000);
    await context.close();
  }
  return median(times);
}

/**
 * The console in Debian's chromium against Sluice in this process (the control plane only, as the
 * API bench runs it), with PIPES pipes and a year of one pipe's history (SLUICE_PIPE_HISTORY_DAYS
 * 365): the first load until the sign-in form takes input, against a bare page of a bare Fastify
 * route; the pipes page until the first page of pipes shows with their statuses, and a pipe's
 * "Last day" until its chart is drawn, each against the same API calls made from Node.
 */
export async function benchConsole(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-bench-console-'));
  const sluice = await createSluice(
    loadConfig({
      SLUICE_DATA_DIR: join(dir, 'data'),
      SLUICE_PORT: '0',
      SLUICE_RATE_LIMIT: '0',
      SLUICE_BOOTSTRAP_KEY_ID: KEY.id,
      SLUICE_BOOTSTRAP_KEY_SECRET: KEY.secret,
      SLUICE_PIPE_HISTORY_DAYS: '365',
    }),
    { logger: createLogger('warn'), runtime: false },
  );
  const bare = Fastify();
  bare.get('/', async (_request, reply) =>
    reply
      .type('text/html')
      .send('<!doctype html><form><input name="k" aria-label="k"><button>Go</button></form>'),
  );
  const browser = await launchBrowser();
  try {
    const base = await sluice.listen();
    const bareBase = await bare.listen({ host: '127.0.0.1', port: 0 });
    const organization = (await sluice.identity.listOrganizations({ organizationId: '', operator: true }))[0];
    const service = (await sluice.identity.listServices(organization?.id ?? ''))[0];
    const scope = { organizationId: organization?.id ?? '', serviceId: service?.id ?? '' };
    const pipesUrl = `${base}/v1/organizations/${scope.organizationId}/services/${scope.serviceId}/pipes`;
    const headers = {
      authorization: `Basic ${Buffer.from(`${KEY.id}:${KEY.secret}`).toString('base64')}`,
      'content-type': 'application/json',
    };
    const made =
      1000 *
      (await timed(async () => {
        for (let i = 0; i < PIPES; i += 10) {
          await Promise.all(
            Array.from({ length: Math.min(10, PIPES - i) }, (_, j) =>
              fetch(pipesUrl, {
                method: 'POST',
                headers,
                body: JSON.stringify({
                  ...objectStoragePipe(),
                  name: `pipe ${String(i + j).padStart(4, '0')}`,
                }),
              }),
            ),
          );
        }
      }));
    const first = (
      (await (await fetch(pipesUrl, { headers })).json()) as { result: { id: string; name: string }[] }
    ).result.sort((a, b) => a.name.localeCompare(b.name))[0];
    // A year of minutes of the first pipe, as the runtime writes them (src/pipes/history).
    const engine = await serviceEngine(sluice, scope);
    await ensureHistory(engine, 365);
    await engine.execute(
      `INSERT INTO _sluice_history.pipe_events (at, pipe_id, pipe_name, kind, rows, bytes) SELECT now() - toIntervalMinute(number), '${first?.id}', 'pipe 0000', 'batch', 600, 60000 FROM numbers(525600) SETTINGS max_partitions_per_insert_block = 1000`,
    );

    const signedIn = async (page: Page) => {
      await page.goto('/');
      await page.getByLabel('API key id').fill(KEY.id);
      await page.getByLabel('API key secret').fill(KEY.secret);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator('.who').waitFor();
    };
    const usage = cpuUsage();
    const firstLoad = await coldRuns(browser, base, async (page) => {
      await page.goto('/');
      await page.getByLabel('API key id').waitFor();
    });
    const bareLoad = await coldRuns(browser, bareBase, async (page) => {
      await page.goto('/');
      await page.getByLabel('k').waitFor();
    });
    const pipesPage = await coldRuns(browser, base, async (page) => {
      await signedIn(page);
      await page.locator('tr[data-pipe="pipe 0049"] td').nth(5).getByText('0', { exact: true }).waitFor();
    });
    // The same requests from Node: the sign-in, the list, the statuses of its first page of 50.
    const apiRuns: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      apiRuns.push(
        1000 *
          (await timed(async () => {
            const session = await fetch(`${base}/console/session`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ keyId: KEY.id, keySecret: KEY.secret }),
            });
            const cookie = { cookie: String(session.headers.get('set-cookie')).split(';')[0] ?? '' };
            const list = (await (await fetch(pipesUrl, { headers: cookie })).json()) as {
              result: { id: string }[];
            };
            await Promise.all(
              list.result
                .slice(0, 50)
                .map((p) => fetch(`${pipesUrl}/${p.id}/status`, { headers: cookie }).then((r) => r.json())),
            );
          })),
      );
    }
    const pipesApi = median(apiRuns);
    const dayChart = await coldRuns(browser, base, async (page) => {
      await signedIn(page);
      await page.goto(`/#/s/${scope.serviceId}/pipes/${first?.id}`);
      await page.getByRole('heading', { name: 'pipe 0000' }).waitFor();
      await page.getByRole('button', { name: 'Last day' }).click();
      await page.locator('.chart .u-legend').first().waitFor();
      await page.waitForResponse((r) => r.url().endsWith('/query') && r.status() === 200);
    });
    const sizes = JSON.parse(
      readFileSync(new URL('../dist/console/sizes.json', import.meta.url), 'utf8'),
    ) as Record<string, { gzip: number; brotli: number }>;
    const cpu = usage();
    const ms = (n: number) => Math.round(n);
    printTable(
      `Console in Chromium (${RUNS} cold loads each, median; ${PIPES} pipes made in ${ms(made)} ms; a year of one pipe's minutes; script ${Math.round((sizes['app.js']?.brotli ?? 0) / 1024)} KB brotli, ${Math.round((sizes['app.js']?.gzip ?? 0) / 1024)} KB gzip)`,
      [
        { what: 'bare page of a bare Fastify route, to its form', ms: ms(bareLoad), ratio: '1.00' },
        {
          what: 'console first load, to the sign-in form',
          ms: ms(firstLoad),
          ratio: (firstLoad / bareLoad).toFixed(2),
        },
        { what: 'its requests from Node: sign-in, list, 50 statuses', ms: ms(pipesApi), ratio: '1.00' },
        {
          what: `sign-in to the pipes page of ${PIPES}, statuses shown`,
          ms: ms(pipesPage),
          ratio: (pipesPage / pipesApi).toFixed(2),
        },
        { what: "a pipe's page, Last day drawn from a year of minutes", ms: ms(dayChart), ratio: '' },
      ],
    );
    console.log(
      `during the loads: the machine's cores ${cpu.machineBusy} busy; this process (Sluice and the bare route) ${cpu.processCores} cores, its event loop ${cpu.eventLoop} busy (Chromium and the engine are processes of their own)`,
    );
  } finally {
    await browser.close();
    await bare.close();
    await sluice.close();
    await rm(dir, { recursive: true, force: true });
  }
}
