import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kafkaPipe } from './support/pipes.js';
import { startSluice, type TestSluice } from './support/sluice.js';

describe('health, metrics, logs and the OpenAPI document', () => {
  let s: TestSluice;
  beforeAll(async () => {
    s = await startSluice();
  });
  afterAll(() => s.close());

  it('GET /health answers without credentials', async () => {
    const response = await s.request({ method: 'GET', url: '/health', auth: null });
    expect(response.statusCode).toBe(200);
    expect(response.json).toEqual({ status: 'ok', checks: { metadata: 'ok' } });
  });

  it('GET /metrics exposes request counts by route pattern', async () => {
    await s.request({ method: 'GET', url: s.pipesUrl });
    const response = await s.request({ method: 'GET', url: '/metrics', auth: null });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    expect(response.body).toContain(
      'sluice_http_requests_total{method="GET",route="/v1/organizations/:organizationId/services/:serviceId/pipes",status="200"}',
    );
    expect(response.body).toContain('sluice_process_resident_memory_bytes');
  });

  it('logs are JSON lines; every request line carries its request id; no secret or header is logged', async () => {
    const created = await s.request({ method: 'POST', url: s.pipesUrl, body: kafkaPipe() });
    const id = created.json.requestId;
    const lines = s.logs
      .flatMap((chunk) => chunk.split('\n'))
      .filter(Boolean)
      .map((line) => JSON.parse(line));
    const mine = lines.filter((line) => line.requestId === id);
    expect(mine.map((line) => line.msg)).toEqual(['incoming request', 'request completed']);
    for (const line of lines.filter((l) => l.req || l.res))
      expect(line.requestId).toEqual(expect.any(String));
    const text = s.logs.join('');
    expect(text).not.toContain('KAFKA-SECRET-never-returned');
    expect(text).not.toContain(s.admin.slice(6));
  });

  it('GET /v1/openapi.json is OpenAPI 3.1 and covers every /v1 endpoint with its schemas', async () => {
    const response = await s.request({ method: 'GET', url: '/v1/openapi.json', auth: null });
    expect(response.statusCode).toBe(200);
    const doc = response.json;
    expect(doc.openapi).toBe('3.1.0');
    const operations = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(
      ([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const org = '/v1/organizations/{organizationId}';
    const pipes = `${org}/services/{serviceId}/pipes`;
    expect(operations.sort()).toEqual(
      [
        'GET /v1/organizations',
        'POST /v1/organizations',
        `GET ${org}`,
        `GET ${org}/services`,
        `POST ${org}/services`,
        `GET ${org}/services/{serviceId}`,
        `GET ${org}/keys`,
        `POST ${org}/keys`,
        `DELETE ${org}/keys/{keyId}`,
        `GET ${org}/teams`,
        `POST ${org}/teams`,
        `GET ${org}/teams/{teamId}/tokens`,
        `POST ${org}/teams/{teamId}/tokens`,
        `DELETE ${org}/teams/{teamId}/tokens/{tokenId}`,
        `GET ${pipes}`,
        `POST ${pipes}`,
        `GET ${pipes}/{pipeId}`,
        `PATCH ${pipes}/{pipeId}`,
        `DELETE ${pipes}/{pipeId}`,
        `PATCH ${pipes}/{pipeId}/state`,
        `PATCH ${pipes}/{pipeId}/scaling`,
        `GET ${pipes}/{pipeId}/settings`,
        `GET ${pipes}/{pipeId}/status`,
        `POST ${org}/services/{serviceId}/query`,
        `PUT ${pipes}/{pipeId}/settings`,
      ].sort(),
    );
    const create = doc.paths[pipes].post;
    const body = create.requestBody.content['application/json'].schema;
    expect(Object.keys(body.properties)).toEqual([
      'name',
      'source',
      'destination',
      'fieldMappings',
      'scaling',
      'settings',
    ]);
    expect(body.properties.source.properties.kafka.properties.authentication.enum).toContain('SCRAM-SHA-512');
    const record = create.responses['200'].content['application/json'].schema.properties.result;
    expect(record.properties.source.properties.kafka.properties.credentials).toBeUndefined();
    expect(create.responses['400']).toBeDefined();
  });
});
