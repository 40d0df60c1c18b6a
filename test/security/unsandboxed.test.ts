import { afterEach, describe, expect, it } from 'vitest';
import { objectStoragePipe } from '../support/pipes.js';
import { basic, startSluice, type TestSluice } from '../support/sluice.js';

/**
 * Where engines run without the sandbox (SLUICE_SANDBOX=off here, as where bubblewrap cannot start),
 * only the operator organization's SQL reaches them: every other organization's queries, source
 * expressions and pipes are refused with a 403 that says why and what the operator can do, unless
 * the operator accepts the risk (SLUICE_ALLOW_UNSANDBOXED_SQL=true), which is logged at every start.
 */
describe('security: without a sandbox, tenant SQL is the operator’s alone unless the risk is accepted', () => {
  let s: TestSluice | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  /** Another organization with a service, its admin key and a team token. */
  async function tenant(sluice: TestSluice) {
    const created = await sluice.request({
      method: 'POST',
      url: '/v1/organizations',
      body: { name: 'tenant' },
    });
    const { organization, key } = created.json.result;
    const auth = basic(key.id, key.secret);
    const base = `/v1/organizations/${organization.id}`;
    const service = await sluice.request({
      method: 'POST',
      url: `${base}/services`,
      body: { name: 'own' },
      auth,
    });
    const team = await sluice.request({ method: 'POST', url: `${base}/teams`, body: { name: 't' }, auth });
    const token = await sluice.request({
      method: 'POST',
      url: `${base}/teams/${team.json.result.id}/tokens`,
      body: { user: 'ann' },
      auth,
    });
    return {
      auth,
      bearer: `Bearer ${token.json.result.token}`,
      serviceId: service.json.result.id as string,
      service: `${base}/services/${service.json.result.id}`,
    };
  }

  /** `SELECT 1` by another organization's admin key, on its own service. */
  async function selectOneAsTenant(sluice: TestSluice, other?: Awaited<ReturnType<typeof tenant>>) {
    const caller = other ?? (await tenant(sluice));
    return sluice.request({
      method: 'POST',
      url: `${caller.service}/query`,
      body: { sql: 'SELECT 1 AS one' },
      auth: caller.auth,
    });
  }

  it('says so in /health and the log, runs the operator’s SQL and refuses every other organization’s', async () => {
    s = await startSluice({ env: { SLUICE_SANDBOX: 'off' } });
    const health = await s.request({ method: 'GET', url: '/health', auth: null });
    expect(health.json.sandbox).toEqual({
      sandboxed: false,
      detail: 'turned off (SLUICE_SANDBOX=off)',
      tenantSql: 'operator only',
    });
    expect(s.logs.join('')).toContain('engines run without a sandbox');
    const own = await s.request({
      method: 'POST',
      url: `/v1/organizations/${s.organizationId}/services/${s.serviceId}/query`,
      body: { sql: 'SELECT 1 AS one' },
    });
    expect(own.statusCode, own.body).toBe(200);

    const other = await tenant(s);
    const query = await selectOneAsTenant(s, other);
    expect(query.statusCode, query.body).toBe(403);
    expect(query.json.code).toBe('SLUICE_ERR_UNSANDBOXED_SQL');
    expect(query.json.error).toContain('bubblewrap');
    expect(query.json.error).toContain('SLUICE_ALLOW_UNSANDBOXED_SQL');

    const pipe = await s.request({
      method: 'POST',
      url: `${other.service}/pipes`,
      body: objectStoragePipe(),
      auth: other.auth,
    });
    expect(pipe.statusCode, pipe.body).toBe(403);
    expect(pipe.json.code).toBe('SLUICE_ERR_UNSANDBOXED_SQL');
    const pipes = await s.request({ method: 'GET', url: `${other.service}/pipes`, auth: other.auth });
    expect(pipes.json.result).toEqual([]);

    const source = await s.request({
      method: 'POST',
      url: '/api/v2/sources',
      body: {
        name: 'r',
        kind: 'log',
        serviceId: other.serviceId,
        from: { databaseName: 'default', tableName: 'requests' },
        timestampValueExpression: 'ts',
      },
      auth: other.bearer,
    });
    expect(source.statusCode, source.body).toBe(403);
    expect(source.json.code).toBe('SLUICE_ERR_UNSANDBOXED_SQL');
  });

  it('with the risk accepted, every organization’s SQL runs, and every start warns', async () => {
    s = await startSluice({ env: { SLUICE_SANDBOX: 'off', SLUICE_ALLOW_UNSANDBOXED_SQL: 'true' } });
    const health = await s.request({ method: 'GET', url: '/health', auth: null });
    expect(health.json.sandbox.tenantSql).toBe('every organization');
    expect(s.logs.join('')).toContain('WITHOUT a sandbox and SLUICE_ALLOW_UNSANDBOXED_SQL=true');
    const query = await selectOneAsTenant(s);
    expect(query.statusCode, query.body).toBe(200);
  });

  it('sandboxed (the default where bubblewrap runs), /health says bwrap and every organization’s SQL runs', async () => {
    s = await startSluice();
    const health = await s.request({ method: 'GET', url: '/health', auth: null });
    expect(health.json.sandbox).toEqual({
      sandboxed: true,
      detail: 'bwrap',
      tenantSql: 'every organization',
    });
    const query = await selectOneAsTenant(s);
    expect(query.statusCode, query.body).toBe(200);
  });
});
