import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BOOTSTRAP_KEY_ID,
  BOOTSTRAP_KEY_SECRET,
  BOOTSTRAP_TOKEN,
  basic,
  startSluice,
  type TestSluice,
} from '../support/sluice.js';
import { keyOf } from './support.js';

/**
 * Failed authentications are limited per client address (SLUICE_AUTH_FAILURES), before any secret
 * is hashed: a new key id or token per request does not help, and someone who knows a key id does
 * not lock its owner out from elsewhere. `/metrics` needs a key of the operator organization.
 */
describe('security: authentication failures and metrics', () => {
  let s: TestSluice;
  beforeAll(async () => {
    s = await startSluice({ runtime: false, env: { SLUICE_AUTH_FAILURES: '5' } });
  });
  afterAll(async () => {
    await s?.close();
  });

  const from = (
    remoteAddress: string,
    authorization: string,
    url = `/v1/organizations/${s.organizationId}/services`,
  ) => s.sluice.server.inject({ method: 'GET', url, remoteAddress, headers: { authorization } });

  it('an address that failed too often is refused with 429 before its secret is checked; other addresses are not', async () => {
    for (let i = 0; i < 5; i += 1) {
      const wrong = await from('10.0.0.1', basic(`sk_guess_${i}`, 'not-the-secret-0123456789'));
      expect(wrong.statusCode).toBe(401);
    }
    // Even the right key is refused from that address now: the check comes before any hash.
    const blocked = await from('10.0.0.1', basic(BOOTSTRAP_KEY_ID, BOOTSTRAP_KEY_SECRET));
    expect(blocked.statusCode, blocked.body).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(blocked.json().code).toBe('SLUICE_ERR_AUTH_FAILURES');
    // The key's owner, elsewhere, is not locked out, though the attacker knew its id.
    for (let i = 0; i < 5; i += 1) await from('10.0.0.3', basic(BOOTSTRAP_KEY_ID, 'wrong-secret-0123456789'));
    const owner = await from('10.0.0.2', basic(BOOTSTRAP_KEY_ID, BOOTSTRAP_KEY_SECRET));
    expect(owner.statusCode, owner.body).toBe(200);
  });

  it('wrong access tokens count the same way', async () => {
    for (let i = 0; i < 5; i += 1) {
      const wrong = await from('10.0.1.1', `Bearer slt_guess-${i}-0123456789abcdef`, '/api/v2/alerts');
      expect(wrong.statusCode).toBe(401);
    }
    const blocked = await from('10.0.1.1', `Bearer ${BOOTSTRAP_TOKEN}`, '/api/v2/alerts');
    expect(blocked.statusCode, blocked.body).toBe(429);
    const elsewhere = await from('10.0.1.2', `Bearer ${BOOTSTRAP_TOKEN}`, '/api/v2/alerts');
    expect(elsewhere.statusCode, elsewhere.body).toBe(200);
  });

  it('/metrics answers a key of the operator organization only', async () => {
    const anonymous = await s.sluice.server.inject({
      method: 'GET',
      url: '/metrics',
      remoteAddress: '10.0.2.1',
    });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.body).not.toContain('sluice_http_requests_total');
    const created = await s.request({ method: 'POST', url: '/v1/organizations', body: { name: 'tenant' } });
    const tenant = basic(created.json.result.key.id, created.json.result.key.secret);
    const other = await from('10.0.2.1', tenant, '/metrics');
    expect(other.statusCode).toBe(401);
    expect(other.body).not.toContain('sluice_http_requests_total');
    const reader = await from('10.0.2.1', await keyOf(s, 'read-only'), '/metrics');
    expect(reader.statusCode).toBe(200);
    expect(reader.body).toContain('sluice_http_requests_total');
  });

  it('a body nested 150,000 levels deep is a 400 naming the depth, in both areas, never a 500', async () => {
    const deep = `${'{"a":'.repeat(150_000)}1${'}'.repeat(150_000)}`;
    for (const [url, authorization] of [
      [s.pipesUrl, s.admin],
      ['/api/v2/alerts', `Bearer ${BOOTSTRAP_TOKEN}`],
    ] as const) {
      const answer = await s.sluice.server.inject({
        method: 'POST',
        url,
        payload: deep,
        headers: { authorization, 'content-type': 'application/json' },
      });
      expect(answer.statusCode, answer.body.slice(0, 300)).toBe(400);
      expect(answer.body).toContain('deeper than 64 levels');
    }
    // Strings may hold any number of brackets.
    const brackets = await s.request({ method: 'POST', url: s.pipesUrl, body: { name: '['.repeat(10_000) } });
    expect(brackets.body).not.toContain('deeper than');
  });

  it('a body holding NUL (U+0000) anywhere is a 400 naming where, in both areas, with nothing stored, never a 500', async () => {
    // The metadata store's text refuses NUL: before, a pipe or dashboard named with one was a 500.
    const bearer = `Bearer ${BOOTSTRAP_TOKEN}`;
    const listed = async (url: string, authorization: string) => {
      const { json } = await s.request({ method: 'GET', url, auth: authorization });
      return JSON.stringify(json.result ?? json.data);
    };
    const pipesBefore = await listed(s.pipesUrl, s.admin);
    const dashboardsBefore = await listed('/api/v2/dashboards', bearer);
    expect([pipesBefore?.[0], dashboardsBefore?.[0]]).toEqual(['[', '[']);
    for (const [url, authorization, body, where] of [
      [s.pipesUrl, s.admin, { name: 'p\u0000' }, 'name:'],
      ['/api/v2/dashboards', bearer, { name: 'd\u0000', tiles: [] }, 'name:'],
      ['/api/v2/dashboards', bearer, { name: 'd', tiles: [], tags: ['ok', 't\u0000'] }, 'tags[1]:'],
      ['/api/v2/dashboards', bearer, { name: 'd', 'k\u0000': 1 }, 'its name holds'],
    ] as const) {
      const answer = await s.request({ method: 'POST', url, body, auth: authorization });
      expect(answer.statusCode, answer.body).toBe(400);
      expect(answer.json.code).toBe('SLUICE_ERR_VALIDATION');
      expect(answer.body).toContain(where);
      expect(answer.body).toContain('U+0000 (NUL)');
    }
    expect(await listed(s.pipesUrl, s.admin)).toEqual(pipesBefore);
    expect(await listed('/api/v2/dashboards', bearer)).toEqual(dashboardsBefore);
    // The six characters `\u0000` as text are not NUL.
    const text = await s.request({
      method: 'POST',
      url: '/api/v2/dashboards',
      body: { name: 'd \\u0000', tiles: [] },
      auth: bearer,
    });
    expect(text.statusCode, text.body).toBe(200);
  });
});
