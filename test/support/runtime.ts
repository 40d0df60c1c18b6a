import { expect } from 'vitest';
import type { TestSluice } from './sluice.js';
import { waitFor } from './wait.js';

/** A pipe's status, as the API reports it. */
export async function statusOf(s: TestSluice, pipeId: string) {
  const response = await s.request({ method: 'GET', url: `${s.pipesUrl}/${pipeId}/status` });
  expect(response.statusCode).toBe(200);
  return response.json.result;
}

export async function waitForState(s: TestSluice, pipeId: string, state: string, timeoutMs = 60_000) {
  let seen = 'unknown';
  try {
    return await waitFor(
      `pipe ${pipeId} to be ${state}`,
      async () => {
        const status = await statusOf(s, pipeId);
        seen = `${status.state} (${status.reason}; last error: ${status.lastError})`;
        if (status.state === 'Failed' && state !== 'Failed') throw new Error(`pipe failed: ${status.reason}`);
        return status.state === state ? status : undefined;
      },
      timeoutMs,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}; it is ${seen}`);
  }
}

/** Runs SQL through the API's query endpoint and returns its rows. */
export async function sql(s: TestSluice, text: string, auth?: string) {
  const response = await s.request({
    method: 'POST',
    url: `/v1/organizations/${s.organizationId}/services/${s.serviceId}/query`,
    body: { sql: text },
    ...(auth ? { auth } : {}),
  });
  if (response.statusCode !== 200)
    throw new Error(`query failed (${response.statusCode}): ${response.json?.error}`);
  return response.json.result.rows as Record<string, unknown>[];
}

export async function createPipe(s: TestSluice, body: unknown): Promise<string> {
  const response = await s.request({ method: 'POST', url: s.pipesUrl, body });
  if (response.statusCode !== 200)
    throw new Error(`create failed (${response.statusCode}): ${response.json?.error}`);
  return response.json.result.id as string;
}

/** A one-off pipe named `database` from the NDJSON files at `url` into `<database>.rows (id UInt64)`. */
export function createFilePipe(s: TestSluice, database: string, url: string): Promise<string> {
  return createPipe(s, {
    name: database,
    source: { objectStorage: { format: 'JSONEachRow', url } },
    destination: {
      database,
      table: 'rows',
      tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
      columns: [{ name: 'id', type: 'UInt64' }],
    },
  });
}

/**
 * A `file://` pipe into `<database>.rows (id UInt64)` whose files never come: its batches are the
 * test's own, claimed and read by hand on a Sluice started without its runtime.
 */
export function createPipeWithoutFiles(s: TestSluice, database: string): Promise<string> {
  return createFilePipe(s, database, 'file:///none/*.ndjson');
}

/**
 * Waits until a pipe has committed everything up to the end of its source: the store's cursor
 * (where its next claim starts; it moves with each claim, in the same transaction that records the
 * batch) is where `atEnd` says the source ends, and, read after it, no batch is claimed and not yet
 * committed. From then on a record read twice or read again would already be in the target, so a
 * test asserts that nothing more arrived on this fact rather than after a pause.
 */
export async function waitForCommittedToEnd(
  s: TestSluice,
  pipeId: string,
  atEnd: (cursor: any, status: any) => boolean,
  timeoutMs = 60_000,
) {
  const progress = s.sluice.store.repos.progress;
  return waitFor(
    `pipe ${pipeId} to commit all of its source`,
    async () => {
      const status = await statusOf(s, pipeId);
      const cursor = (await progress.get(pipeId))?.cursor ?? null;
      if (!atEnd(cursor, status)) return undefined;
      return (await progress.openBatches(pipeId)).length === 0 ? status : undefined;
    },
    timeoutMs,
  );
}
