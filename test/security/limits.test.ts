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

describe('security: memory and time that no statement lifts', () => {
  let s: TestSluice;
  let query: string;
  beforeAll(async () => {
    s = await startSluice({
      runtime: false,
      env: { SLUICE_ENGINE_MEMORY_MB: '300', SLUICE_QUERY_TIMEOUT: '2' },
    });
    query = `/v1/organizations/${s.organizationId}/services/${s.serviceId}/query`;
  });
  afterAll(async () => {
    await s?.close();
  });
  const run = (sql: string) => s.request({ method: 'POST', url: query, body: { sql } });
  const GREEDY = "SELECT length(groupArray(repeat('x', 1000))) AS n FROM numbers(1000000)";

  it('a statement over half of SLUICE_ENGINE_MEMORY_MB fails, and the engine answers on', async () => {
    const greedy = await run(GREEDY);
    expect(greedy.statusCode, greedy.body).toBe(400);
    expect(greedy.json.error).toContain('memory limit exceeded');
    expect(greedy.json.error).toContain('Query memory limit exceeded');
    expect(greedy.json.error).toContain('maximum: 150.00 MiB');
    expect((await run('SELECT 1 AS one')).json.result.rows).toEqual([{ one: 1 }]);
  });

  it('an admin cannot lift the memory of a statement: max_memory_usage = 0 or above the limit is refused', async () => {
    for (const value of ['0', '1000000000']) {
      const lifted = await run(`${GREEDY} SETTINGS max_memory_usage = ${value}`);
      expect(lifted.statusCode, lifted.body).toBe(400);
      expect(lifted.json.error).toContain('max_memory_usage shouldn');
    }
  });

  it('an admin who lifts max_execution_time is stopped at SLUICE_QUERY_TIMEOUT all the same (its engine ends), and the engine answers on', async () => {
    const started = Date.now();
    const endless = await run(
      'SELECT sum(sipHash64(number)) AS s FROM numbers(100000000000) SETTINGS max_execution_time = 0',
    );
    expect(endless.statusCode, endless.body).toBe(400);
    expect(endless.json.error).toContain('ran past its time limit of 2 s, which no setting lifts');
    expect(Date.now() - started).toBeLessThan(15_000);
    const next = await run('SELECT 1 AS one');
    expect(next.statusCode, next.body).toBe(200);
    expect(next.json.result.rows).toEqual([{ one: 1 }]);
  });

  it('without lifting it, the engine stops the statement itself at the limit', async () => {
    const slow = await run('SELECT sum(sipHash64(number)) AS s FROM numbers(100000000000)');
    expect(slow.statusCode, slow.body).toBe(400);
    expect(slow.json.error).toContain('TIMEOUT_EXCEEDED');
  });
});
