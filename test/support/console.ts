import { rm } from 'node:fs/promises';
import type { Browser } from 'playwright-core';
import { expect } from 'vitest';
import type { WatchedPage } from './browser.js';
import { type Running, serveBin, stop } from './built-cli.js';

export interface Key {
  id: string;
  secret: string;
}

/**
 * Sluice as a user starts it for the console (bin/sluice.js serve on a new data directory), with
 * the first admin key it prints: what a new user copies to sign in.
 */
export async function serveForConsole(
  dataDir: string,
  env: Record<string, string> = {},
): Promise<{ server: Running; admin: Key }> {
  const server = await serveBin(['--port', '0'], {
    SLUICE_DATA_DIR: dataDir,
    SLUICE_LOG_LEVEL: 'warn',
    SLUICE_RATE_LIMIT: '0',
    SLUICE_AUTH_FAILURES: '0',
    ...env,
  });
  const printed = server.output();
  const admin = {
    id: /API key id:\s+(\S+)/.exec(printed)?.[1] ?? '',
    secret: /API key secret:\s+(\S+)/.exec(printed)?.[1] ?? '',
  };
  expect(admin.id, printed).toMatch(/^sk_/);
  return { server, admin };
}

/** Calls the API with a key (Basic) or a token (Bearer): the status and the JSON back. */
export function apiOf(server: Running, defaultWho: () => Key | { bearer: string }) {
  return async (method: string, path: string, body?: unknown, who = defaultWho()) => {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: {
        authorization:
          'bearer' in who
            ? `Bearer ${who.bearer}`
            : `Basic ${Buffer.from(`${who.id}:${who.secret}`).toString('base64')}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as { result: any } };
  };
}

/** Signs in through the page as a user does, and waits for the signed-in header. */
export async function signIn({ page }: WatchedPage, key: Key): Promise<void> {
  await page.goto('/');
  await page.getByLabel('API key id').fill(key.id);
  await page.getByLabel('API key secret').fill(key.secret);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('.who', { hasText: key.id }).waitFor();
}

/**
 * Ends what a console browser test started, each part only if it was: its tabs (one that will not
 * close is let be), the browser, the Sluice it served, then its directory.
 */
export async function closeConsole(started: {
  tabs: (WatchedPage | undefined)[];
  browser: Browser | undefined;
  server: Running | undefined;
  dir: string;
}): Promise<void> {
  for (const tab of started.tabs) await tab?.context.close().catch(() => undefined);
  await started.browser?.close();
  if (started.server) await stop(started.server.child);
  await rm(started.dir, { recursive: true, force: true });
}
