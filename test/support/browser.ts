import { existsSync } from 'node:fs';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

/**
 * Debian's chromium driven by playwright-core (no browser download): installed by .ci/run, or by
 * hand with `sudo apt-get install -y chromium`. SLUICE_CHROMIUM names another binary.
 */
export const CHROMIUM = process.env.SLUICE_CHROMIUM ?? '/usr/bin/chromium';

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `the console's browser tests need Chromium at ${CHROMIUM}: install Debian's package with \`sudo apt-get install -y chromium\` (.ci/run does), or set SLUICE_CHROMIUM to a Chromium binary`,
    );
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}

/**
 * A browser tab that keeps every console error and uncaught page error it sees, so a test can
 * assert there were none.
 */
export interface WatchedPage {
  page: Page;
  context: BrowserContext;
  problems: string[];
}

export async function openPage(browser: Browser, baseURL: string): Promise<WatchedPage> {
  const context = await browser.newContext({ baseURL, viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  // A step that does not happen fails naming its locator, well before the test's own timeout.
  page.setDefaultTimeout(20_000);
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return { page, context, problems };
}
