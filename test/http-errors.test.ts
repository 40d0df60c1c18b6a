import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopChild } from './support/child.js';
import { callApi, type ServedSluice, serveEnv, sluiceServe } from './support/cli.js';
import { objectStoragePipe } from './support/pipes.js';
import {
  BOOTSTRAP_KEY_ID,
  BOOTSTRAP_KEY_SECRET,
  BOOTSTRAP_TOKEN,
  basic,
  startSluice,
  type TestSluice,
} from './support/sluice.js';
import { waitFor } from './support/wait.js';

describe('HTTP status codes and the error envelope', () => {
  let s: TestSluice;
  beforeAll(async () => {
    s = await startSluice({ env: { SLUICE_BODY_LIMIT: '4096', SLUICE_RATE_LIMIT: '0' } });
  });
  afterAll(() => s.close());

  const expectEnvelope = (
    response: { json: any; headers: Record<string, unknown> },
    status: number,
    label: string,
    code: string,
  ) => {
    expect(Object.keys(response.json).sort()).toEqual(['code', 'error', 'requestId', 'status']);
    expect(response.json.status).toBe(status);
    // `error` keeps the words clients have matched; `code` is the condition's own field.
    expect(response.json.error).toMatch(new RegExp(`^${label}: .+`));
    expect(response.json.code).toBe(code);
    expect(response.json.requestId).toBe(response.headers['x-request-id']);
  };

  it('400 for malformed JSON, and nothing is stored', async () => {
    const response = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: '{"name": "broken",',
      headers: { 'content-type': 'application/json' },
    });
    expect(response.statusCode).toBe(400);
    expectEnvelope(response, 400, 'BAD_REQUEST', 'SLUICE_ERR_INVALID_JSON');
    expect((await s.request({ method: 'GET', url: s.pipesUrl })).json.result).toEqual([]);
  });

  it('401 with WWW-Authenticate: Basic, without or with wrong credentials', async () => {
    for (const auth of [
      null,
      'Bearer abc',
      basic('sk_test_admin', 'wrong'),
      basic('sk_unknown', 'x'),
      'Basic !!!',
    ]) {
      const response = await s.request({ method: 'GET', url: s.pipesUrl, auth });
      expect(response.statusCode).toBe(401);
      expect(response.headers['www-authenticate']).toMatch(/^Basic realm="sluice"/);
      expectEnvelope(response, 401, 'UNAUTHORIZED', 'SLUICE_ERR_UNAUTHENTICATED');
    }
  });

  it('403 when the key role is too weak', async () => {
    const key = await s.request({
      method: 'POST',
      url: `/v1/organizations/${s.organizationId}/keys`,
      body: { name: 'reader', role: 'read-only' },
    });
    const reader = basic(key.json.result.id, key.json.result.secret);
    const response = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: objectStoragePipe(),
      auth: reader,
    });
    expect(response.statusCode).toBe(403);
    expectEnvelope(response, 403, 'FORBIDDEN', 'SLUICE_ERR_FORBIDDEN');
    expect(response.json.error).toBe(
      'FORBIDDEN: this needs a key with role developer or stronger; this key is read-only',
    );
    expect((await s.request({ method: 'GET', url: s.pipesUrl, auth: reader })).statusCode).toBe(200);
  });

  it('404 for an unknown route, organization, service or pipe', async () => {
    for (const [url, code] of [
      ['/v1/nothing-here', 'SLUICE_ERR_ROUTE_NOT_FOUND'],
      [
        `/v1/organizations/00000000-0000-0000-0000-000000000000/services`,
        'SLUICE_ERR_ORGANIZATION_NOT_FOUND',
      ],
      [
        `/v1/organizations/${s.organizationId}/services/00000000-0000-0000-0000-000000000000/pipes`,
        'SLUICE_ERR_SERVICE_NOT_FOUND',
      ],
      [`${s.pipesUrl}/00000000-0000-0000-0000-000000000000`, 'SLUICE_ERR_PIPE_NOT_FOUND'],
    ] as const) {
      const response = await s.request({ method: 'GET', url });
      expect(response.statusCode, url).toBe(404);
      expectEnvelope(response, 404, 'NOT_FOUND', code);
    }
  });

  it('409 with the code of the conflict: a name taken', async () => {
    const url = `/v1/organizations/${s.organizationId}/services`;
    const body = { name: 'twice', kind: 'embedded' };
    expect((await s.request({ method: 'POST', url, body })).statusCode).toBe(200);
    const response = await s.request({ method: 'POST', url, body });
    expect(response.statusCode).toBe(409);
    expectEnvelope(response, 409, 'CONFLICT', 'SLUICE_ERR_NAME_TAKEN');
  });

  it('413 for a body over SLUICE_BODY_LIMIT, and nothing is stored', async () => {
    const body = objectStoragePipe({ name: 'x'.repeat(5000) });
    const response = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(response.statusCode).toBe(413);
    expectEnvelope(response, 413, 'PAYLOAD_TOO_LARGE', 'SLUICE_ERR_BODY_TOO_LARGE');
    expect((await s.request({ method: 'GET', url: s.pipesUrl })).json.result).toEqual([]);
  });

  it('415 for a body that is not JSON', async () => {
    const response = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: 'name=x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(response.statusCode).toBe(415);
    expectEnvelope(response, 415, 'UNSUPPORTED_MEDIA_TYPE', 'SLUICE_ERR_MEDIA_TYPE');
    expect(response.json.error).toContain('send Content-Type: application/json');
  });

  it('500 names only the request id, never internals, over a real socket too', async () => {
    const other = await startSluice({ env: { SLUICE_PORT: '0', SLUICE_HOST: '127.0.0.1' } });
    const url = await other.sluice.listen();
    await other.sluice.store.close(); // the metadata store goes away under a running server
    const response = await other.request({ method: 'GET', url: other.pipesUrl });
    expect(response.statusCode).toBe(500);
    expectEnvelope(response, 500, 'INTERNAL_ERROR', 'SLUICE_ERR_INTERNAL');
    expect(response.json.error).toBe(
      `INTERNAL_ERROR: unexpected error; the server log has details under request id ${response.json.requestId}`,
    );
    expect(other.logs.join('')).toContain(response.json.requestId);
    // A client still connected is not one that left (src/http/errors.ts), whatever its body.
    for (const method of ['GET', 'POST']) {
      const real = await fetch(`${url}${other.pipesUrl}`, {
        method,
        headers: { authorization: other.admin, 'content-type': 'application/json' },
        ...(method === 'POST' ? { body: '{}' } : {}),
      });
      expect(real.status).toBe(500);
      expect(((await real.json()) as { code: string }).code).toBe('SLUICE_ERR_INTERNAL');
    }
    await other.sluice.server.close();
  });
});

describe('rate limit', () => {
  let s: TestSluice;
  beforeAll(async () => {
    s = await startSluice({ env: { SLUICE_RATE_LIMIT: '5' } });
  });
  afterAll(() => s.close());

  it('429 with Retry-After past SLUICE_RATE_LIMIT requests per 10 s per key', async () => {
    const statuses: number[] = [];
    let limited: Awaited<ReturnType<TestSluice['request']>> | undefined;
    for (let i = 0; i < 8; i += 1) {
      const response = await s.request({ method: 'GET', url: s.pipesUrl });
      statuses.push(response.statusCode);
      if (response.statusCode === 429) limited ??= response;
    }
    // startSluice itself made two requests with the same key.
    expect(statuses.filter((code) => code === 200)).toHaveLength(3);
    expect(statuses.slice(3)).toEqual([429, 429, 429, 429, 429]);
    expect(Number(limited?.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited?.json.status).toBe(429);
    expect(limited?.json.code).toBe('SLUICE_ERR_RATE_LIMITED');
    expect(limited?.json.error).toMatch(/^TOO_MANY_REQUESTS: more than 5 requests in 10 s for this key/);
    const health = await s.request({ method: 'GET', url: '/health', auth: null });
    expect(health.statusCode).toBe(200);
  });

  it('counts console cookies by address, before the cookie is looked up: a new random cookie each time gains nothing', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i += 1) {
      const cookie = `sluice_session=sls_${randomBytes(32).toString('base64url')}`;
      const response = await s.request({ method: 'GET', url: s.pipesUrl, auth: null, headers: { cookie } });
      statuses.push(response.statusCode);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
  });

  it('counts per access token in the alerts area, answering {message} with Retry-After', async () => {
    const auth = `Bearer ${BOOTSTRAP_TOKEN}`;
    const statuses: number[] = [];
    let limited: Awaited<ReturnType<TestSluice['request']>> | undefined;
    for (let i = 0; i < 7; i += 1) {
      const response = await s.request({ method: 'GET', url: '/api/v2/alerts', auth });
      statuses.push(response.statusCode);
      if (response.statusCode === 429) limited ??= response;
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    expect(Number(limited?.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited?.json).toEqual({
      message: expect.stringMatching(/^more than 5 requests in 10 s for this key/),
      code: 'SLUICE_ERR_RATE_LIMITED',
    });
  });
});

describe('a client that leaves before its answer (sluice serve, a real socket)', () => {
  let dir: string;
  let server: ServedSluice;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-leaving-'));
    server = await sluiceServe(serveEnv(dir, { SLUICE_LOG_LEVEL: 'info' }));
  }, 60_000);
  afterAll(async () => {
    if (server) await stopChild(server.child);
    await rm(dir, { recursive: true, force: true });
  });

  it('is no server error: a query whose client left before its rows is logged at info, and the server answers on', async () => {
    const auth = basic(BOOTSTRAP_KEY_ID, BOOTSTRAP_KEY_SECRET);
    const [organization] = (await callApi(`${server.url}/v1/organizations`)).result;
    const [service] = (await callApi(`${server.url}/v1/organizations/${organization.id}/services`)).result;
    const query = `${server.url}/v1/organizations/${organization.id}/services/${service.id}/query`;
    // The client leaves while the statement runs: its rows then meet a closed connection.
    const leaving = new AbortController();
    const answer = fetch(query, {
      method: 'POST',
      signal: leaving.signal,
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify({ sql: 'SELECT sleep(1) AS slept' }),
    });
    setTimeout(() => leaving.abort(), 200);
    await expect(answer).rejects.toThrow(/abort/i);
    // The rows met the closed connection once the statement ended: the server logged it.
    await waitFor(
      'the log line of the closed connection',
      async () => server.output().includes('Premature close'),
      10_000,
    );
    expect(server.output()).not.toContain('unexpected error');
    expect(server.output()).toContain('the client closed the connection before the answer was sent');
    const again = await callApi(query, 'POST', { sql: 'SELECT 1 AS one' });
    expect(again.result.rows).toEqual([{ one: 1 }]);
  });
});
