import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectStoragePipe } from './support/pipes.js';
import { BOOTSTRAP_TOKEN, basic, startSluice, type TestSluice } from './support/sluice.js';

describe('HTTP status codes and the error envelope', () => {
  let s: TestSluice;
  beforeAll(async () => {
    s = await startSluice({ env: { SLUICE_BODY_LIMIT: '4096', SLUICE_RATE_LIMIT: '0' } });
  });
  afterAll(() => s.close());

  const expectEnvelope = (
    response: { json: any; headers: Record<string, unknown> },
    status: number,
    code: string,
  ) => {
    expect(Object.keys(response.json).sort()).toEqual(['error', 'requestId', 'status']);
    expect(response.json.status).toBe(status);
    expect(response.json.error).toMatch(new RegExp(`^${code}: .+`));
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
    expectEnvelope(response, 400, 'BAD_REQUEST');
    expect(response.json.error).toContain('not valid JSON');
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
      expectEnvelope(response, 401, 'UNAUTHORIZED');
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
    expectEnvelope(response, 403, 'FORBIDDEN');
    expect(response.json.error).toBe(
      'FORBIDDEN: this needs a key with role developer or stronger; this key is read-only',
    );
    expect((await s.request({ method: 'GET', url: s.pipesUrl, auth: reader })).statusCode).toBe(200);
  });

  it('404 for an unknown route, organization, service or pipe', async () => {
    for (const url of [
      '/v1/nothing-here',
      `/v1/organizations/00000000-0000-0000-0000-000000000000/services`,
      `/v1/organizations/${s.organizationId}/services/00000000-0000-0000-0000-000000000000/pipes`,
      `${s.pipesUrl}/00000000-0000-0000-0000-000000000000`,
    ]) {
      const response = await s.request({ method: 'GET', url });
      expect(response.statusCode, url).toBe(404);
      expectEnvelope(response, 404, 'NOT_FOUND');
    }
  });

  it('413 for a body over SLUICE_BODY_LIMIT, and nothing is stored', async () => {
    const body = objectStoragePipe({ name: 'x'.repeat(5000) });
    const response = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(response.statusCode).toBe(413);
    expectEnvelope(response, 413, 'PAYLOAD_TOO_LARGE');
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
    expectEnvelope(response, 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect(response.json.error).toContain('send Content-Type: application/json');
  });

  it('500 names only the request id, never internals', async () => {
    const other = await startSluice();
    await other.sluice.store.close(); // the metadata store goes away under a running server
    const response = await other.request({ method: 'GET', url: other.pipesUrl });
    expect(response.statusCode).toBe(500);
    expectEnvelope(response, 500, 'INTERNAL_ERROR');
    expect(response.json.error).toBe(
      `INTERNAL_ERROR: unexpected error; the server log has details under request id ${response.json.requestId}`,
    );
    expect(other.logs.join('')).toContain(response.json.requestId);
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
    expect(limited?.json.error).toMatch(/^TOO_MANY_REQUESTS: more than 5 requests in 10 s for this key/);
    const health = await s.request({ method: 'GET', url: '/health', auth: null });
    expect(health.statusCode).toBe(200);
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
    });
  });
});
