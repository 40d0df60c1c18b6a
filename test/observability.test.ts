import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningKinesis, startKinesisWithStream } from './support/kinesis.js';
import { kinesisPipe } from './support/pipes.js';
import { sql, waitForState } from './support/runtime.js';
import { startSluice, type TestSluice } from './support/sluice.js';

describe('health, metrics, logs and the OpenAPI document', () => {
  let s: TestSluice;
  let kinesis: RunningKinesis;
  beforeAll(async () => {
    // The sample Kinesis body's stream, on the tests' kinesalite (the SDK reads the endpoint from
    // the environment, as a user's server does).
    kinesis = await startKinesisWithStream('clicks');
    s = await startSluice({ logLevel: 'debug' });
  });
  afterAll(async () => {
    await s?.close();
    await kinesis?.stop();
  });

  it('GET /health answers without credentials', async () => {
    const response = await s.request({ method: 'GET', url: '/health', auth: null });
    expect(response.statusCode).toBe(200);
    expect(response.json).toEqual({
      status: 'ok',
      checks: { metadata: 'ok' },
      sandbox: { sandboxed: true, detail: 'bwrap', tenantSql: 'every organization' },
    });
  });

  it('GET /metrics exposes request counts by route pattern', async () => {
    await s.request({ method: 'GET', url: s.pipesUrl });
    const response = await s.request({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    expect(response.body).toContain(
      'sluice_http_requests_total{method="GET",route="/v1/organizations/:organizationId/services/:serviceId/pipes",status="200"}',
    );
    expect(response.body).toContain('sluice_process_resident_memory_bytes');
  });

  it('logs are JSON lines; every request line carries its request id; no secret or header is logged', async () => {
    // A pipe that starts running: a state change to log.
    await sql(s, 'CREATE TABLE IF NOT EXISTS default.clicks (url String) ENGINE = MergeTree ORDER BY url');
    const created = await s.request({ method: 'POST', url: s.pipesUrl, body: kinesisPipe() });
    const id = created.json.requestId;
    const lines = s.logs
      .flatMap((chunk) => chunk.split('\n'))
      .filter(Boolean)
      .map((line) => JSON.parse(line));
    const mine = lines.filter((line) => line.requestId === id);
    // One line per request (at debug level), with its request id.
    expect(mine.map((line) => line.msg)).toEqual(['request completed']);
    expect(mine[0]).toMatchObject({ level: 20, method: 'POST', statusCode: 200 });
    for (const line of lines.filter((l) => l.msg === 'request completed'))
      expect(line.requestId).toEqual(expect.any(String));
    // One line for every state change of a pipe, with the reason.
    await waitForState(s, created.json.result.id, 'Running');
    const changes = s.logs
      .flatMap((chunk) => chunk.split('\n'))
      .filter(Boolean)
      .map((line) => JSON.parse(line))
      .filter((line) => line.pipeId === created.json.result.id);
    expect(changes.map((line) => line.msg)).toContain('pipe clicks from kinesis is Running: ingesting');
    const text = s.logs.join('');
    expect(text).not.toContain('KINESIS-SECRET-never-returned');
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
        `POST ${pipes}/schemaDiscovery`,
        `POST ${pipes}/postgresTables`,
        `GET ${org}/services/{serviceId}/pipesCdcScaling`,
        `PATCH ${org}/services/{serviceId}/pipesCdcScaling`,
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
      // Sluice's own: the alerts on the pipe's history to make with it (README, "Pipe history").
      'healthAlerts',
    ]);
    expect(body.properties.healthAlerts.properties.webhookId.description).toContain('webhook');
    expect(body.properties.source.properties.kafka.properties.authentication.enum).toContain('SCRAM-SHA-512');
    const record = create.responses['200'].content['application/json'].schema.properties.result;
    expect(record.properties.source.properties.kafka.properties.credentials).toBeUndefined();
    expect(create.responses['400']).toBeDefined();
  });
});

describe('logs a person can read', () => {
  it('SLUICE_LOG_FORMAT=pretty writes one readable line per event, redacted as the JSON is', async () => {
    const { Writable } = await import('node:stream');
    const { createLogger } = await import('../src/log.js');
    const { loadConfig } = await import('../src/config.js');
    let text = '';
    const sink = new Writable({
      write(chunk, _encoding, done) {
        text += String(chunk);
        done();
      },
    });
    const logger = createLogger('info', sink, loadConfig({ SLUICE_LOG_FORMAT: 'pretty' }).logFormat);
    logger.info({ pipeId: 'p1', credentials: 'hunter2' }, 'pipe events is Running: ingesting');
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: pipe events is Running: ingesting/);
    expect(text).toContain('"pipeId":"p1"');
    expect(text).not.toContain('hunter2');
    expect(text).not.toMatch(/^\{/);
    expect(() => loadConfig({ SLUICE_LOG_FORMAT: 'xml' })).toThrow(
      'SLUICE_LOG_FORMAT (--log-format) must be one of auto, json, pretty',
    );
  });
});
