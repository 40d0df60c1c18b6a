import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture } from './support/clients.js';
import { sql, statusOf, waitForState } from './support/runtime.js';
import { BOOTSTRAP_TOKEN, startSluice, type TestSluice } from './support/sluice.js';
import { waitFor } from './support/wait.js';

/**
 * What real clients send (the hosted service's Terraform provider and cloud CLI, a new user), to a
 * Sluice started as a user runs it: the pipe runtime on, so create checks run.
 */
describe('what real clients send', () => {
  let s: TestSluice;
  beforeAll(async () => {
    s = await startSluice({ runtime: true });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('a one-off pipe on a location that matches no file is a 400 naming the URL; a continuous one waits', async () => {
    const body = await fixture('oneoff-empty-location');
    const oneOff = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(oneOff.statusCode).toBe(400);
    expect(oneOff.json.error).toContain(
      'source.objectStorage.url: file:///nothing-here/**.ndjson matches no file',
    );
    expect(oneOff.json.code).toBe('SLUICE_ERR_VALIDATION');
    expect(oneOff.json.error).not.toContain(s.dataDir);
    const listed = await s.request({ method: 'GET', url: s.pipesUrl });
    expect(listed.json.result).toEqual([]);
    body.source.objectStorage.isContinuous = true;
    const continuous = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(continuous.statusCode).toBe(200);
    const status = await waitForState(s, continuous.json.result.id, 'Running');
    expect(status).toMatchObject({ filesDone: 0, filesPending: 0 });
  });

  it('start on a running pipe is a 400 saying it "is already running" (Terraform takes that as success)', async () => {
    const body = await fixture('oneoff-empty-location');
    body.name = 'waiting';
    body.destination.table = 'waiting';
    body.source.objectStorage.isContinuous = true;
    const created = await s.request({ method: 'POST', url: s.pipesUrl, body });
    const id = created.json.result.id;
    await waitForState(s, id, 'Running');
    const start = await s.request({
      method: 'PATCH',
      url: `${s.pipesUrl}/${id}/state`,
      body: await fixture('state-start'),
    });
    expect(start.statusCode).toBe(400);
    expect(start.json.error).toContain('is already running');
    expect(start.json.code).toBe('SLUICE_ERR_PIPE_STATE');
  });

  it("errors name file:// paths as the user wrote them, never the server's directories", async () => {
    const files = join(s.dataDir, 'files', 'broken');
    await mkdir(files, { recursive: true });
    await writeFile(join(files, 'a.ndjson'), '{"id": 1, "name": "ok"}\n{"id": "not a number", ');
    const body = await fixture('oneoff-empty-location');
    body.name = 'broken';
    body.destination.table = 'broken';
    body.source.objectStorage.url = 'file:///broken/*.ndjson';
    body.source.validateSamples = true;
    const response = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(response.statusCode).toBe(400);
    expect(response.json.error).toContain('source.validateSamples: broken/a.ndjson, record 2');
    expect(response.json.error).toContain('(in file/uri file:///broken/a.ndjson)');
    expect(response.json.code).toBe('SLUICE_ERR_VALIDATION');
    expect(response.json.error).not.toContain(s.dataDir);
  });

  it("a mistake in the table is a 400 at create, with the engine's reason and suggestion", async () => {
    await mkdir(join(s.dataDir, 'files', 'table-checks'), { recursive: true });
    await writeFile(join(s.dataDir, 'files', 'table-checks', 'a.ndjson'), '{"id": 1, "name": "a"}\n');
    const body = await fixture('oneoff-empty-location');
    body.name = 'table checks';
    body.destination.table = 'table_checks';
    body.source.objectStorage.url = 'file:///table-checks/*.ndjson';
    const typo = structuredClone(body);
    typo.destination.columns[0].type = 'Uint64';
    const refused = await s.request({ method: 'POST', url: s.pipesUrl, body: typo });
    expect(refused.statusCode).toBe(400);
    expect(refused.json.error).toContain('destination.columns[0].type');
    expect(refused.json.error).toContain("Maybe you meant: ['UInt64'");
    expect(refused.json.code).toBe('SLUICE_ERR_VALIDATION');
    const partition = structuredClone(body);
    partition.destination.tableDefinition.partitionBy = 'toYYYYMM(created_at)';
    const missing = await s.request({ method: 'POST', url: s.pipesUrl, body: partition });
    expect(missing.statusCode).toBe(400);
    expect(missing.json.error).toContain('destination.tableDefinition: the engine cannot make this table');
    expect(missing.json.error).toContain('created_at');
    expect(missing.json.code).toBe('SLUICE_ERR_VALIDATION');
    const listed = await s.request({ method: 'GET', url: s.pipesUrl });
    expect(listed.json.result.map((p: { name: string }) => p.name)).not.toContain(body.name);
  });

  it('an engine failure that waiting cannot fix fails the pipe with the reason, and lastError says it', async () => {
    const dir = join(s.dataDir, 'files', 'shrinking');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, '1.ndjson'), '{"id": 1, "name": "a"}\n');
    const body = await fixture('oneoff-empty-location');
    body.name = 'shrinking';
    body.destination.table = 'shrinking';
    body.source.objectStorage.url = 'file:///shrinking/*.ndjson';
    body.source.objectStorage.isContinuous = true;
    body.settings = { object_storage_polling_interval_ms: 200 };
    const created = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(created.statusCode, created.body).toBe(200);
    const id = created.json.result.id;
    await waitFor('the first file', async () => ((await statusOf(s, id)).filesDone === 1 ? true : undefined));
    await sql(s, 'ALTER TABLE default.shrinking DROP COLUMN name');
    await writeFile(join(dir, '2.ndjson'), '{"id": 2, "name": "b"}\n');
    const failed = await waitForState(s, id, 'Failed');
    expect(failed.reason).toContain('name');
    expect(failed.lastError).toContain('name');
    // A table that no longer fits the pipe: the runtime fails it by this code, not by the words.
    expect(failed.lastErrorCode).toBe('SLUICE_ERR_DESTINATION_MISMATCH');
    expect(failed.lastErrorAt).not.toBeNull();
  });

  it('destination columns without a mapping take their default; only a mapping to no column is an error', async () => {
    const dir = join(s.dataDir, 'files', 'defaults');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'a.ndjson'), '{"id": 1, "name": "a"}\n{"id": 2, "name": "b"}\n');
    await sql(s, 'CREATE DATABASE IF NOT EXISTS app');
    await sql(
      s,
      "CREATE TABLE app.with_default (id UInt64, name String, inserted_at DateTime DEFAULT now(), note String DEFAULT 'none') ENGINE = MergeTree ORDER BY id",
    );
    const body = await fixture('unmapped-columns');
    const created = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(created.statusCode, created.body).toBe(200);
    await waitForState(s, created.json.result.id, 'Completed');
    const rows = await sql(
      s,
      'SELECT id, name, inserted_at > now() - INTERVAL 1 HOUR AS recent, note FROM app.with_default ORDER BY id',
    );
    expect(rows).toEqual([
      { id: 1, name: 'a', recent: 1, note: 'none' },
      { id: 2, name: 'b', recent: 1, note: 'none' },
    ]);
    body.name = 'unknown column';
    body.fieldMappings.push({ sourceField: 'x', destinationField: 'nope' });
    const unknown = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json.error).toContain('fieldMappings[2].destinationField');
    expect(unknown.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('null means absent, and empty optional strings and arrays mean not set (cloud CLI bodies)', async () => {
    // The cloud CLI's body is an MSK IAM pipe on made-up brokers: a running Sluice reads its nulls
    // and then checks the brokers (their names say no AWS region, and this node has none); that
    // the rest is accepted and kept is asked of a Sluice with its runtime off.
    const refused = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: await fixture('cli-kafka-iam-role'),
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json.error).toBe(
      'BAD_REQUEST: source.kafka.brokers: cannot tell the AWS region for MSK IAM: the brokers are not named *.kafka.<region>.amazonaws.com and AWS_REGION is not set',
    );
    expect(refused.json.code).toBe('SLUICE_ERR_VALIDATION');
    const rulesOnly = await startSluice({ runtime: false });
    try {
      await nullsAreAbsent(rulesOnly);
    } finally {
      await rulesOnly.close();
    }
  });

  async function nullsAreAbsent(s: TestSluice) {
    const kafka = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: await fixture('cli-kafka-iam-role'),
    });
    expect(kafka.statusCode, kafka.body).toBe(200);
    const record = kafka.json.result;
    expect(record.source.kafka.consumerGroup).toBe(`pipes-${record.id}`);
    expect(record.source.kafka).not.toHaveProperty('credentials');
    expect(record.source.kafka).not.toHaveProperty('reversePrivateEndpointIds');
    expect(record.scaling).toEqual({ replicas: 1 });
    expect(record.settings ?? {}).toEqual({});
    const postgres = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: await fixture('cli-postgres-mappings'),
    });
    expect(postgres.statusCode, postgres.body).toBe(200);
    const [mapping] = postgres.json.result.source.postgres.tableMappings;
    expect(mapping).toEqual({
      sourceSchemaName: 'public',
      sourceTable: 'users',
      targetTable: 'app_users',
      useCustomSortingKey: false,
      tableEngine: 'ReplacingMergeTree',
    });
    // PATCH and scaling as Terraform sends them: every unset attribute null.
    const url = `${s.pipesUrl}/${record.id}`;
    const patched = await s.request({ method: 'PATCH', url, body: await fixture('terraform-patch-nulls') });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json.result.name).toBe('orders from msk');
    const scaled = await s.request({
      method: 'PATCH',
      url: `${url}/scaling`,
      body: await fixture('terraform-scaling'),
    });
    expect(scaled.statusCode, scaled.body).toBe(200);
    expect(scaled.json.result.scaling).toEqual({ replicas: 2 });
  }

  it('DELETE with Content-Type: application/json and no body (as SDKs send every request) deletes; an empty POST is still a 400', async () => {
    const json = { 'content-type': 'application/json' };
    const body = await fixture('oneoff-empty-location');
    body.name = 'deleted by an sdk';
    body.source.objectStorage.isContinuous = true;
    const created = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(created.statusCode).toBe(200);
    const url = `${s.pipesUrl}/${created.json.result.id}`;
    const deleted = await s.request({ method: 'DELETE', url, headers: json });
    expect(deleted.statusCode).toBe(200);
    expect((await s.request({ method: 'GET', url })).statusCode).toBe(404);
    const empty = await s.request({ method: 'POST', url: s.pipesUrl, headers: json });
    expect(empty.statusCode).toBe(400);
    expect(empty.json.code).toBe('SLUICE_ERR_INVALID_JSON');
  });

  it('DELETE of an alert that is already gone answers 200', async () => {
    const auth = `Bearer ${BOOTSTRAP_TOKEN}`;
    const missing = '6700000000000000000000aa';
    const response = await s.request({ method: 'DELETE', url: `/api/v2/alerts/${missing}`, auth });
    expect(response.statusCode).toBe(200);
  });
});
