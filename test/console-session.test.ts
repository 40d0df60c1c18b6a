import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import selfsigned from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';
import {
  BOOTSTRAP_KEY_ID,
  BOOTSTRAP_KEY_SECRET,
  BOOTSTRAP_TOKEN,
  basic,
  startSluice,
  type TestResponse,
  type TestSluice,
} from './support/sluice.js';

/** A console sign-in to `s` with the bootstrap admin key, from a browser with no cookie yet. */
const signInAsAdmin = (s: TestSluice) =>
  s.request({
    method: 'POST',
    url: '/console/session',
    auth: null,
    body: { keyId: BOOTSTRAP_KEY_ID, keySecret: BOOTSTRAP_KEY_SECRET },
  });

/** The browser sign-in of the console (issue 38; README, "The console: sign-in sessions"). */
describe('console sessions', () => {
  let s: TestSluice;

  /** The cookie's value of a sign-in's Set-Cookie. */
  const cookieOf = (response: TestResponse): string => {
    const header = String(response.headers['set-cookie']);
    const value = /^sluice_session=([^;]*);/.exec(header)?.[1];
    if (!value) throw new Error(`no session cookie in ${header}`);
    return value;
  };
  const signIn = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    s.request({ method: 'POST', url: '/console/session', body, auth: null, headers });
  /** A request that authenticates with the session cookie alone (no Authorization header). */
  const withCookie = (
    cookie: string,
    method: 'GET' | 'POST' | 'DELETE',
    url: string,
    options: { body?: unknown; headers?: Record<string, string> } = {},
  ) =>
    s.request({
      method,
      url,
      auth: null,
      ...(options.body === undefined ? {} : { body: options.body }),
      headers: { cookie: `sluice_session=${cookie}`, ...options.headers },
    });
  const makeKey = async (role: string, organizationId = s.organizationId, auth = s.admin) => {
    const key = await s.request({
      method: 'POST',
      url: `/v1/organizations/${organizationId}/keys`,
      body: { role },
      auth,
    });
    expect(key.statusCode, key.body).toBe(200);
    return { id: key.json.result.id as string, secret: key.json.result.secret as string };
  };
  const sessionCount = () => s.sluice.store.repos.consoleSessions.count();
  /** The bootstrap organization's first team: once the tests add teams, its admin keys must name one. */
  const defaultTeamId = async () => {
    const teams = await s.request({ method: 'GET', url: `/v1/organizations/${s.organizationId}/teams` });
    return teams.json.result.find((team: any) => team.name === 'default').id as string;
  };

  beforeAll(async () => {
    s = await startSluice({ runtime: false, logLevel: 'debug' });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('an admin key signs in: an HttpOnly, SameSite=Strict cookie that reads /v1 and /api/v2', async () => {
    const response = await signIn({ keyId: BOOTSTRAP_KEY_ID, keySecret: BOOTSTRAP_KEY_SECRET });
    expect(response.statusCode, response.body).toBe(201);
    const cookie = String(response.headers['set-cookie']);
    expect(cookie).toMatch(/^sluice_session=sls_[A-Za-z0-9_-]{43}; /);
    const attributes = cookie.split('; ').slice(1);
    expect(attributes).toEqual(['HttpOnly', 'SameSite=Strict', 'Path=/', 'Max-Age=43200']);
    expect(cookie).not.toContain('Secure');
    const result = response.json.result;
    expect(response.json).toMatchObject({ status: 201, requestId: expect.any(String) });
    expect(result).toEqual({
      expiresAt: expect.any(String),
      csrfToken: expect.any(String),
      key: {
        id: BOOTSTRAP_KEY_ID,
        organizationId: s.organizationId,
        organizationName: 'default',
        role: 'admin',
        operator: true,
      },
      alerts: {
        teamId: expect.any(String),
        teamName: 'default',
        userId: expect.any(String),
        userName: 'console',
      },
    });
    expect(Date.parse(result.expiresAt) - Date.now()).toBeGreaterThan(11.9 * 3_600_000);
    expect(response.body).not.toContain(BOOTSTRAP_KEY_SECRET);

    const value = cookieOf(response);
    const services = await withCookie(value, 'GET', `/v1/organizations/${s.organizationId}/services`);
    expect(services.statusCode, services.body).toBe(200);
    expect(services.json.result[0].id).toBe(s.serviceId);
    const me = await withCookie(value, 'GET', '/api/v2');
    expect(me.json).toEqual({
      version: 'v2',
      user: { id: result.alerts.userId, name: 'console', team: result.alerts.teamId },
    });
    const alerts = await withCookie(value, 'GET', '/api/v2/alerts');
    expect(alerts.statusCode, alerts.body).toBe(200);
    expect(alerts.json.data).toEqual([]);
    const current = await withCookie(value, 'GET', '/console/session');
    expect(current.statusCode).toBe(200);
    expect(current.json.result).toEqual(result);
    // Both hold the CSRF token: no cache keeps them.
    expect(response.headers['cache-control']).toBe('no-store');
    expect(current.headers['cache-control']).toBe('no-store');
    // Signing in again from this browser replaces its session: the old cookie is no session now.
    const again = await s.request({
      method: 'POST',
      url: '/console/session',
      auth: null,
      headers: { cookie: `sluice_session=${value}` },
      body: { keyId: BOOTSTRAP_KEY_ID, keySecret: BOOTSTRAP_KEY_SECRET },
    });
    expect(again.statusCode, again.body).toBe(201);
    expect((await withCookie(value, 'GET', s.pipesUrl)).statusCode).toBe(401);
    expect((await withCookie(cookieOf(again), 'GET', s.pipesUrl)).statusCode).toBe(200);
  });

  it('changes need the x-sluice-csrf header and this server as Origin; Authorization wins over the cookie', async () => {
    const response = await signIn({ keyId: BOOTSTRAP_KEY_ID, keySecret: BOOTSTRAP_KEY_SECRET });
    const value = cookieOf(response);
    const csrf = response.json.result.csrfToken as string;
    const teams = `/v1/organizations/${s.organizationId}/teams`;
    const missing = await withCookie(value, 'POST', teams, { body: { name: 'csrf-less' } });
    expect(missing.statusCode).toBe(403);
    expect(missing.json.code).toBe('SLUICE_ERR_CSRF');
    expect(missing.json.error).toMatch(/^FORBIDDEN: .*x-sluice-csrf/);
    const wrong = await withCookie(value, 'POST', teams, {
      body: { name: 'csrf-wrong' },
      headers: { 'x-sluice-csrf': `${csrf.slice(0, -1)}x` },
    });
    expect(wrong.json.code).toBe('SLUICE_ERR_CSRF');
    const foreign = await withCookie(value, 'POST', teams, {
      body: { name: 'csrf-foreign' },
      headers: { 'x-sluice-csrf': csrf, origin: 'https://evil.example' },
    });
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json.code).toBe('SLUICE_ERR_CSRF');
    expect(foreign.json.error).toContain('https://evil.example');
    const names = (await s.request({ method: 'GET', url: teams })).json.result.map((t: any) => t.name);
    expect(names).not.toContain('csrf-less');
    expect(names).not.toContain('csrf-foreign');
    // From the server's own origin (inject's Host is localhost:80), with the header: it works.
    const created = await withCookie(value, 'POST', teams, {
      body: { name: 'made-by-console' },
      headers: { 'x-sluice-csrf': csrf, origin: 'http://localhost' },
    });
    expect(created.statusCode, created.body).toBe(200);
    // An Authorization header is used whatever cookie comes with it: a wrong one is a 401.
    const both = await s.request({
      method: 'GET',
      url: `/v1/organizations/${s.organizationId}/services`,
      auth: basic(BOOTSTRAP_KEY_ID, 'wrong-secret-0123456789'),
      headers: { cookie: `sluice_session=${value}` },
    });
    expect(both.statusCode).toBe(401);
  });

  it('a read-only key: /v1 at its role, no /api/v2 unless an access token comes with it', async () => {
    const reader = await makeKey('read-only');
    const response = await signIn({ keyId: reader.id, keySecret: reader.secret });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json.result.alerts).toBeNull();
    expect(response.json.result.alertsUnavailable).toMatch(/access token of your team.*or with an admin key/);
    const value = cookieOf(response);
    const csrf = { 'x-sluice-csrf': response.json.result.csrfToken };
    expect((await withCookie(value, 'GET', s.pipesUrl)).statusCode).toBe(200);
    const create = await withCookie(value, 'POST', `/v1/organizations/${s.organizationId}/teams`, {
      body: { name: 'by-reader' },
      headers: csrf,
    });
    expect(create.statusCode).toBe(403);
    expect(create.json.code).toBe('SLUICE_ERR_FORBIDDEN');
    expect(create.json.error).toContain('this key is read-only');
    const alerts = await withCookie(value, 'GET', '/api/v2/alerts');
    expect(alerts.statusCode).toBe(401);
    expect(alerts.json).toEqual({ code: 'SLUICE_ERR_UNAUTHENTICATED', message: expect.any(String) });
    expect(alerts.json.message).toContain('no user of a team');
    expect(alerts.json.message).toContain('access token');

    const withToken = await signIn({
      keyId: reader.id,
      keySecret: reader.secret,
      accessToken: BOOTSTRAP_TOKEN,
    });
    expect(withToken.statusCode, withToken.body).toBe(201);
    expect(withToken.json.result.alerts).toMatchObject({ teamName: 'default', userName: 'admin' });
    expect(withToken.json.result.alertsUnavailable).toBeUndefined();
    const bound = cookieOf(withToken);
    expect((await withCookie(bound, 'GET', '/api/v2/alerts')).statusCode).toBe(200);
    // Still read-only under /v1.
    const again = await withCookie(bound, 'POST', `/v1/organizations/${s.organizationId}/teams`, {
      body: { name: 'by-reader' },
      headers: { 'x-sluice-csrf': withToken.json.result.csrfToken },
    });
    expect(again.statusCode).toBe(403);

    const badToken = await signIn({ keyId: reader.id, keySecret: reader.secret, accessToken: 'slt_nope' });
    expect(badToken.statusCode).toBe(401);
    expect(badToken.json.error).toContain('accessToken');
    expect(badToken.json.code).toBe('SLUICE_ERR_UNAUTHENTICATED');
  });

  it('a session bound with an access token ends when the token is revoked', async () => {
    const team = await s.request({
      method: 'POST',
      url: `/v1/organizations/${s.organizationId}/teams`,
      body: { name: 'token-team' },
    });
    const tokens = `/v1/organizations/${s.organizationId}/teams/${team.json.result.id}/tokens`;
    const token = await s.request({ method: 'POST', url: tokens, body: { user: 'ann' } });
    const reader = await makeKey('read-only');
    const response = await signIn({
      keyId: reader.id,
      keySecret: reader.secret,
      accessToken: token.json.result.token,
    });
    const value = cookieOf(response);
    expect((await withCookie(value, 'GET', '/api/v2')).json.user.name).toBe('ann');
    await s.request({ method: 'DELETE', url: `${tokens}/${token.json.result.id}` });
    expect((await withCookie(value, 'GET', '/api/v2/alerts')).statusCode).toBe(401);
    expect((await withCookie(value, 'GET', s.pipesUrl)).statusCode).toBe(401);
    const over = await withCookie(value, 'GET', '/console/session');
    expect(over.statusCode).toBe(200);
    expect(over.json.result).toBeNull();
  });

  it('refused sign-ins store nothing: wrong secret, bad fields, a token of another organization', async () => {
    const org = await s.request({ method: 'POST', url: '/v1/organizations', body: { name: 'acme' } });
    expect(org.statusCode, org.body).toBe(200);
    const { organization, key } = org.json.result;
    const before = await sessionCount();
    const wrong = await signIn({ keyId: key.id, keySecret: 'not-the-secret-0123456789' });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json).toMatchObject({
      status: 401,
      code: 'SLUICE_ERR_UNAUTHENTICATED',
      error: 'UNAUTHORIZED: the API key id or secret is wrong, or the key was revoked',
    });
    expect(wrong.headers['set-cookie']).toBeUndefined();
    const missing = await signIn({ keyId: key.id });
    expect(missing.statusCode).toBe(400);
    expect(missing.json.code).toBe('SLUICE_ERR_VALIDATION');
    expect(missing.json.error).toContain('keySecret');
    const badUser = await signIn({ keyId: key.id, keySecret: key.secret, user: ' padded ' });
    expect(badUser.statusCode).toBe(400);
    expect(badUser.json.error).toContain('user');
    expect(badUser.json.code).toBe('SLUICE_ERR_VALIDATION');
    const foreign = await signIn({ keyId: key.id, keySecret: key.secret, accessToken: BOOTSTRAP_TOKEN });
    expect(foreign.statusCode).toBe(400);
    expect(foreign.json.error).toContain('accessToken');
    expect(foreign.json.code).toBe('SLUICE_ERR_VALIDATION');
    expect(await sessionCount()).toBe(before);
    const acmeAdmin = basic(key.id, key.secret);
    const teams = `/v1/organizations/${organization.id}/teams`;
    expect((await s.request({ method: 'GET', url: teams, auth: acmeAdmin })).json.result).toEqual([]);

    // The first good sign-in of an organization without teams makes its team "default".
    const good = await signIn({ keyId: key.id, keySecret: key.secret, user: 'ops' });
    expect(good.statusCode, good.body).toBe(201);
    expect(good.json.result.alerts).toMatchObject({ teamName: 'default', userName: 'ops' });
    expect(await sessionCount()).toBe(before + 1);
    const listed = (await s.request({ method: 'GET', url: teams, auth: acmeAdmin })).json.result;
    expect(listed.map((t: any) => t.name)).toEqual(['default']);
  });

  it('an admin key of an organization with several teams must name one: a 400 lists them', async () => {
    const org = await s.request({ method: 'POST', url: '/v1/organizations', body: { name: 'multi' } });
    const { organization, key } = org.json.result;
    const auth = basic(key.id, key.secret);
    const teams = `/v1/organizations/${organization.id}/teams`;
    const red = (await s.request({ method: 'POST', url: teams, body: { name: 'red' }, auth })).json.result;
    const blue = (await s.request({ method: 'POST', url: teams, body: { name: 'blue' }, auth })).json.result;
    const before = await sessionCount();
    const response = await signIn({ keyId: key.id, keySecret: key.secret });
    expect(response.statusCode).toBe(400);
    expect(response.json.code).toBe('SLUICE_ERR_VALIDATION');
    expect(response.json.error).toMatch(/^BAD_REQUEST: teamId: /);
    expect(response.json.error).toContain(`"red" (${red.id})`);
    expect(response.json.error).toContain(`"blue" (${blue.id})`);
    expect(response.json.teams).toEqual([
      { id: red.id, name: 'red' },
      { id: blue.id, name: 'blue' },
    ]);
    expect(response.json.problems).toEqual([{ path: 'teamId', message: expect.any(String) }]);
    expect(response.json.requestId).toEqual(expect.any(String));
    const unknown = await signIn({ keyId: key.id, keySecret: key.secret, teamId: s.organizationId });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json.teams).toHaveLength(2);
    expect(await sessionCount()).toBe(before);
    const chosen = await signIn({ keyId: key.id, keySecret: key.secret, teamId: blue.id });
    expect(chosen.statusCode, chosen.body).toBe(201);
    expect(chosen.json.result.alerts).toMatchObject({
      teamId: blue.id,
      teamName: 'blue',
      userName: 'console',
    });
  });

  it('signing out needs the CSRF header, clears the cookie and ends the session', async () => {
    const teamId = await defaultTeamId();
    const response = await signIn({ keyId: BOOTSTRAP_KEY_ID, keySecret: BOOTSTRAP_KEY_SECRET, teamId });
    const value = cookieOf(response);
    const refused = await withCookie(value, 'DELETE', '/console/session');
    expect(refused.statusCode).toBe(403);
    expect(refused.json.code).toBe('SLUICE_ERR_CSRF');
    expect((await withCookie(value, 'GET', s.pipesUrl)).statusCode).toBe(200);
    const out = await withCookie(value, 'DELETE', '/console/session', {
      headers: { 'x-sluice-csrf': response.json.result.csrfToken },
    });
    expect(out.statusCode).toBe(200);
    expect(out.json).toEqual({ status: 200, requestId: expect.any(String) });
    expect(String(out.headers['set-cookie'])).toBe(
      'sluice_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0',
    );
    for (const url of [s.pipesUrl, '/api/v2/alerts']) {
      const after = await withCookie(value, 'GET', url);
      expect(after.statusCode, url).toBe(401);
      expect(after.json.code).toBe('SLUICE_ERR_UNAUTHENTICATED');
      // No Basic challenge: a browser would answer it with its own password prompt.
      expect(after.headers['www-authenticate']).toBeUndefined();
    }
    // The console asks for its session on every load: none is an answer, not an error, and a
    // cookie of a session that is over is cleared.
    const stale = await withCookie(value, 'GET', '/console/session');
    expect(stale.statusCode).toBe(200);
    expect(stale.json.result).toBeNull();
    expect(String(stale.headers['set-cookie'])).toContain(
      'sluice_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0',
    );
    const none = await s.request({ method: 'GET', url: '/console/session', auth: null });
    expect(none.statusCode).toBe(200);
    expect(none.json.result).toBeNull();
    expect(none.headers['set-cookie']).toBeUndefined();
  });

  it("revoking the session's key ends the session at its next request", async () => {
    const admin = await makeKey('admin');
    const response = await signIn({
      keyId: admin.id,
      keySecret: admin.secret,
      teamId: await defaultTeamId(),
    });
    const value = cookieOf(response);
    expect((await withCookie(value, 'GET', s.pipesUrl)).statusCode).toBe(200);
    const revoked = await s.request({
      method: 'DELETE',
      url: `/v1/organizations/${s.organizationId}/keys/${admin.id}`,
    });
    expect(revoked.statusCode).toBe(200);
    expect((await withCookie(value, 'GET', s.pipesUrl)).statusCode).toBe(401);
    expect((await withCookie(value, 'GET', '/api/v2/alerts')).statusCode).toBe(401);
    const again = await signIn({ keyId: admin.id, keySecret: admin.secret, teamId: await defaultTeamId() });
    expect(again.statusCode).toBe(401);
  });

  it('neither the key secret nor the access token reaches the log', async () => {
    await signIn({ keyId: BOOTSTRAP_KEY_ID, keySecret: BOOTSTRAP_KEY_SECRET, accessToken: BOOTSTRAP_TOKEN });
    await signIn({ keyId: BOOTSTRAP_KEY_ID, keySecret: 'wrong-secret-for-the-log-0123' });
    const log = s.logs.join('');
    expect(log).toContain('/console/session'); // the requests were logged (debug level)
    expect(log).not.toContain(BOOTSTRAP_KEY_SECRET);
    expect(log).not.toContain('wrong-secret-for-the-log-0123');
    expect(log).not.toContain(BOOTSTRAP_TOKEN);
    // Should a body ever be logged, its credentials are censored (src/log.ts, REDACTED_PATHS).
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    createLogger('info', sink).info({ body: { keySecret: 'k-secret', accessToken: 'a-token' } }, 'sign-in');
    expect(lines.join('')).not.toMatch(/k-secret|a-token/);
  });
});

describe('console session lifetime', () => {
  it('SLUICE_CONSOLE_SESSION_HOURS sets Max-Age and an absolute expiry', async () => {
    let now = new Date('2026-03-01T10:00:00.000Z');
    const s = await startSluice({
      runtime: false,
      env: { SLUICE_CONSOLE_SESSION_HOURS: '0.5' },
      clock: () => now,
    });
    try {
      const response = await signInAsAdmin(s);
      expect(response.statusCode, response.body).toBe(201);
      expect(String(response.headers['set-cookie'])).toContain('Max-Age=1800');
      expect(response.json.result.expiresAt).toBe('2026-03-01T10:30:00.000Z');
      const value = /^sluice_session=([^;]*)/.exec(String(response.headers['set-cookie']))?.[1];
      const get = () =>
        s.request({
          method: 'GET',
          url: s.pipesUrl,
          auth: null,
          headers: { cookie: `sluice_session=${value}` },
        });
      now = new Date('2026-03-01T10:29:59.000Z');
      expect((await get()).statusCode).toBe(200);
      now = new Date('2026-03-01T10:30:00.000Z');
      expect((await get()).statusCode).toBe(401);
    } finally {
      await s.close();
    }
  });
});

describe('console sessions over HTTPS', () => {
  it('over HTTPS (served, or SLUICE_PUBLIC_URL https behind a proxy) the cookie is Secure and __Host-; only that one counts, and only once', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-console-https-'));
    const pems = await selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
      keyType: 'ec',
      algorithm: 'sha256',
    });
    await writeFile(join(dir, 'cert.pem'), pems.cert);
    await writeFile(join(dir, 'key.pem'), pems.private);
    const served = { SLUICE_TLS_CERT: join(dir, 'cert.pem'), SLUICE_TLS_KEY: join(dir, 'key.pem') };
    const proxied = { SLUICE_PUBLIC_URL: 'https://sluice.example.com' };
    try {
      for (const env of [served, proxied]) {
        const s = await startSluice({ runtime: false, env });
        try {
          const response = await signInAsAdmin(s);
          expect(response.statusCode, response.body).toBe(201);
          const [pair, ...attributes] = String(response.headers['set-cookie']).split('; ');
          expect(pair).toMatch(/^__Host-sluice_session=sls_/);
          expect(attributes).toEqual(['HttpOnly', 'SameSite=Strict', 'Path=/', 'Max-Age=43200', 'Secure']);
          const value = pair?.split('=')[1] ?? '';
          const read = (cookie: string) =>
            s.request({ method: 'GET', url: s.pipesUrl, auth: null, headers: { cookie } });
          expect((await read(`__Host-sluice_session=${value}`)).statusCode).toBe(200);
          // The plain name, as a sibling domain or a plain-HTTP answer could plant it, is no session.
          expect((await read(`sluice_session=${value}`)).statusCode).toBe(401);
          // Two session cookies: refused, not one of them picked.
          const two = await read(`__Host-sluice_session=sls_planted; __Host-sluice_session=${value}`);
          expect(two.statusCode).toBe(401);
          expect(two.json.error).toContain('2 console session cookies');
          expect(two.json.code).toBe('SLUICE_ERR_UNAUTHENTICATED');
        } finally {
          await s.close();
        }
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
