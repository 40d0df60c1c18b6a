import { expect } from 'vitest';

/** Polls until `check` returns a value (not undefined/false), or fails after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs = 60_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

/** Waits until `target()` reads as `expected` (compared as JSON), e.g. a replica against its source. */
export async function untilEqual(
  target: () => Promise<unknown[]>,
  expected: unknown[],
  what = 'the changes in the target',
  timeoutMs = 30_000,
): Promise<void> {
  await waitFor(
    what,
    async () => {
      const rows = await target();
      return JSON.stringify(rows) === JSON.stringify(expected) ? rows : undefined;
    },
    timeoutMs,
  );
}

/**
 * Waits until `read()` holds `text`, then asserts it (a miss fails with all that was read). For a
 * server's log lines: pino writes them asynchronously, so a line logged just after the banner a
 * start waits for may reach the pipe later than the banner does.
 */
export async function untilContains(
  read: () => string | Promise<string>,
  text: string,
  timeoutMs = 30_000,
): Promise<void> {
  const found = await waitFor(`"${text}"`, async () => (await read()).includes(text), timeoutMs).then(
    () => true,
    () => false,
  );
  if (!found) expect(await read()).toContain(text);
}
