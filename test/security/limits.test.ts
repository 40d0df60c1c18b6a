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

describe('security: an engine’s memory in all', () => {
  let s: TestSluice;
  beforeAll(async () => {
    s = await startSluice({ runtime: false, env: { SLUICE_ENGINE_MEMORY_MB: '300' } });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('a statement over SLUICE_ENGINE_MEMORY_MB fails, even with max_memory_usage = 0, and the engine answers on', async () => {
    const query = `/v1/organizations/${s.organizationId}/services/${s.serviceId}/query`;
    const greedy = await s.request({
      method: 'POST',
      url: query,
      body: {
        sql: "SELECT length(groupArray(repeat('x', 1000))) AS n FROM numbers(1000000) SETTINGS max_memory_usage = 0",
      },
    });
    expect(greedy.statusCode, greedy.body).toBe(400);
    expect(greedy.json.error).toContain('memory limit exceeded');
    const next = await s.request({ method: 'POST', url: query, body: { sql: 'SELECT 1 AS one' } });
    expect(next.json.result.rows).toEqual([{ one: 1 }]);
  });
});
