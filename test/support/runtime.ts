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
