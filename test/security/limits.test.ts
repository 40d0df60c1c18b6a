import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSluice, type TestSluice } from '../support/sluice.js';

/** Limits a tenant cannot lift: services per organization (each service runs engine processes). */
describe('security: limits per organization', () => {
  let s: TestSluice;
  beforeAll(async () => {
    s = await startSluice({ runtime: false, env: { SLUICE_SERVICES_PER_ORGANIZATION: '2' } });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('one service more than SLUICE_SERVICES_PER_ORGANIZATION is a 400 that says so, and nothing is stored', async () => {
    const services = `/v1/organizations/${s.organizationId}/services`;
    const second = await s.request({ method: 'POST', url: services, body: { name: 'second' } });
    expect(second.statusCode, second.body).toBe(200);
    const third = await s.request({ method: 'POST', url: services, body: { name: 'third' } });
    expect(third.statusCode, third.body).toBe(400);
    expect(third.json.error).toContain('the most this server allows (SLUICE_SERVICES_PER_ORGANIZATION = 2)');
    const listed = await s.request({ method: 'GET', url: services });
    expect(listed.json.result.map((x: { name: string }) => x.name).sort()).toEqual(['default', 'second']);
  });
});
