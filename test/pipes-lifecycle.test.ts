import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kafkaPipe, objectStoragePipe, postgresPipe } from './support/pipes.js';
import { startSluice, type TestSluice } from './support/sluice.js';

describe('pipes after create: get, update, state, scaling, settings, delete', () => {
  let s: TestSluice;
  const create = async (body: unknown) => {
    const response = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(response.statusCode).toBe(200);
    return response.json.result;
  };
  beforeAll(async () => {
    s = await startSluice({ runtime: false });
  });
  afterAll(() => s.close());

  it('PATCH changes the name, credentials, columns, mappings and settings and keeps the rest', async () => {
    const pipe = await create(objectStoragePipe());
    await new Promise((resolve) => setTimeout(resolve, 5));
    // Read first: a GET's JSON is made once per record (src/http/record-json.ts) and must not outlive it.
    const before = await s.request({ method: 'GET', url: `${s.pipesUrl}/${pipe.id}` });
    expect(before.json.result.name).toBe(pipe.name);
    const response = await s.request({
      method: 'PATCH',
      url: `${s.pipesUrl}/${pipe.id}`,
      body: {
        name: 'renamed',
        source: { objectStorage: { accessKey: { accessKeyId: 'AKIANEW', secretKey: 'ROTATED-SECRET' } } },
        destination: { columns: [...pipe.destination.columns, { name: 'extra', type: 'String' }] },
        fieldMappings: [...pipe.fieldMappings, { sourceField: 'extra', destinationField: 'extra' }],
        settings: { engine_max_threads: 8 },
      },
    });
    expect(response.statusCode).toBe(200);
    const updated = response.json.result;
    expect(updated.name).toBe('renamed');
    expect(updated.destination.columns.at(-1)).toEqual({ name: 'extra', type: 'String' });
    expect(updated.settings).toEqual({ ...pipe.settings, engine_max_threads: 8 });
    expect(updated.source).toEqual(pipe.source);
    expect(updated.createdAt).toBe(pipe.createdAt);
    expect(updated.updatedAt > pipe.updatedAt).toBe(true);
    expect(response.body).not.toContain('ROTATED-SECRET');
    const after = await s.request({ method: 'GET', url: `${s.pipesUrl}/${pipe.id}` });
    expect(after.json).toEqual({ status: 200, requestId: after.headers['x-request-id'], result: updated });
  });

  it('PATCH validates the result as a whole and stores nothing when it is wrong', async () => {
    const pipe = await create(objectStoragePipe());
    const response = await s.request({
      method: 'PATCH',
      url: `${s.pipesUrl}/${pipe.id}`,
      body: { name: 'never stored', destination: { columns: [{ name: 'only', type: 'String' }] } },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json.error).toContain(
      'fieldMappings[0].destinationField: No destination column is named "id"',
    );
    expect(response.json.code).toBe('SLUICE_ERR_VALIDATION');
    const read = await s.request({ method: 'GET', url: `${s.pipesUrl}/${pipe.id}` });
    // Nothing of the PATCH was stored; the runtime may have moved the state meanwhile.
    const { state: _now, updatedAt: _changed, ...kept } = read.json.result;
    const { state: _then, updatedAt: _created, ...created } = pipe;
    expect(kept).toEqual(created);
  });

  it('PATCH rejects fields that cannot change, another source kind, and an empty body', async () => {
    const pipe = await create(objectStoragePipe());
    const url = `${s.pipesUrl}/${pipe.id}`;
    const cases: [unknown, string, string][] = [
      [
        { source: { objectStorage: { url: 'https://other/*.json' } } },
        'source.objectStorage.url: cannot change after create',
        'SLUICE_ERR_VALIDATION',
      ],
      [{ destination: { table: 'other' } }, 'destination.table: Unknown field', 'SLUICE_ERR_VALIDATION'],
      [{ scaling: { replicas: 2 } }, 'scaling: Unknown field', 'SLUICE_ERR_VALIDATION'],
      [
        { source: { kafka: { iamRole: 'x' } } },
        'source.kafka: this pipe reads from objectStorage',
        'SLUICE_ERR_PIPE_IMMUTABLE',
      ],
      [{}, 'Must not be empty', 'SLUICE_ERR_VALIDATION'],
    ];
    for (const [body, fragment, code] of cases) {
      const response = await s.request({ method: 'PATCH', url, body });
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.json.code, JSON.stringify(body)).toBe(code);
      expect(response.json.error).toContain(fragment);
    }
  });

  it('PATCH switching authentication drops the old credentials', async () => {
    const pipe = await create(kafkaPipe());
    const url = `${s.pipesUrl}/${pipe.id}`;
    const switched = await s.request({
      method: 'PATCH',
      url,
      body: { source: { kafka: { authentication: 'IAM_ROLE', iamRole: 'arn:aws:iam::1:role/reader' } } },
    });
    expect(switched.statusCode).toBe(200);
    expect(switched.json.result.source.kafka).toMatchObject({
      authentication: 'IAM_ROLE',
      iamRole: 'arn:aws:iam::1:role/reader',
    });
    const missing = await s.request({
      method: 'PATCH',
      url,
      body: { source: { kafka: { authentication: 'PLAIN' } } },
    });
    expect(missing.statusCode).toBe(400);
    expect(missing.json.error).toContain('source.kafka.credentials: Required for PLAIN');
    expect(missing.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('state: stop from any state, start only from Stopped or Failed', async () => {
    const pipe = await create(objectStoragePipe());
    const url = `${s.pipesUrl}/${pipe.id}/state`;
    const start = await s.request({ method: 'PATCH', url, body: { command: 'start' } });
    expect(start.statusCode).toBe(400);
    // The words stay: Terraform's provider takes exactly them as success (README, "Pipe states").
    expect(start.json.error).toBe('BAD_REQUEST: the pipe is already running (state Provisioning)');
    expect(start.json.code).toBe('SLUICE_ERR_PIPE_STATE');
    const stop = await s.request({ method: 'PATCH', url, body: { command: 'stop' } });
    expect(stop.statusCode).toBe(200);
    expect(stop.json.result.state).toBe('Stopped');
    const again = await s.request({ method: 'PATCH', url, body: { command: 'stop' } });
    expect(again.json.result.state).toBe('Stopped');
    const restart = await s.request({ method: 'PATCH', url, body: { command: 'start' } });
    expect(restart.statusCode).toBe(200);
    expect(restart.json.result.state).toBe('Provisioning');
    const history = await s.sluice.pipes.transitions(
      { organizationId: s.organizationId, serviceId: s.serviceId },
      pipe.id,
    );
    expect(history.map((t) => [t.fromState, t.toState, t.reason])).toEqual([
      [null, 'Provisioning', 'created'],
      ['Provisioning', 'Stopping', 'stop requested'],
      ['Stopping', 'Stopped', 'stopped by request'],
      ['Stopped', 'Provisioning', 'start requested'],
    ]);
    const bad = await s.request({ method: 'PATCH', url, body: { command: 'pause' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json.error).toBe('BAD_REQUEST: command: Use one of: start, stop, resync');
    expect(bad.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('state: resync only for database pipes', async () => {
    const s3 = await create(objectStoragePipe());
    const refused = await s.request({
      method: 'PATCH',
      url: `${s.pipesUrl}/${s3.id}/state`,
      body: { command: 'resync' },
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json.code).toBe('SLUICE_ERR_PIPE_IMMUTABLE');
    const pg = await create(postgresPipe());
    const url = `${s.pipesUrl}/${pg.id}/state`;
    await s.request({ method: 'PATCH', url, body: { command: 'stop' } });
    const resync = await s.request({ method: 'PATCH', url, body: { command: 'resync' } });
    expect(resync.statusCode).toBe(200);
    expect(resync.json.result.state).toBe('Resync');
  });

  it('postgres table mappings change only while stopped', async () => {
    const pg = await create(postgresPipe());
    const url = `${s.pipesUrl}/${pg.id}`;
    const add = {
      source: { postgres: { tableMappingsToAdd: [{ sourceTable: 'orders', targetTable: 'orders' }] } },
    };
    const running = await s.request({ method: 'PATCH', url, body: add });
    expect(running.statusCode).toBe(400);
    expect(running.json.code).toBe('SLUICE_ERR_PIPE_IMMUTABLE');
    expect(running.json.error).toContain('stop it first, then edit');
    await s.request({ method: 'PATCH', url: `${url}/state`, body: { command: 'stop' } });
    const added = await s.request({ method: 'PATCH', url, body: add });
    expect(added.statusCode).toBe(200);
    expect(added.json.result.source.postgres.tableMappings.at(-1)).toEqual({
      sourceSchemaName: 'public',
      sourceTable: 'orders',
      targetTable: 'orders',
    });
    const remove = {
      source: {
        postgres: {
          tableMappingsToRemove: [
            { sourceSchemaName: 'public', sourceTable: 'users', targetTable: 'app_users' },
          ],
        },
      },
    };
    const removed = await s.request({ method: 'PATCH', url, body: remove });
    expect(removed.statusCode).toBe(200);
    expect(removed.json.result.source.postgres.tableMappings.map((m: any) => m.targetTable)).toEqual([
      'invoices',
      'orders',
    ]);
    const unknown = await s.request({ method: 'PATCH', url, body: remove });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json.error).toContain(
      'source.postgres.tableMappingsToRemove[0]: This pipe has no mapping of public.users to app_users',
    );
    expect(unknown.json.code).toBe('SLUICE_ERR_VALIDATION');
    const duplicate = await s.request({ method: 'PATCH', url, body: add });
    expect(duplicate.statusCode).toBe(400);
    expect(duplicate.json.error).toContain('target tables must be unique');
    expect(duplicate.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('scaling merges into the current scaling and keeps the bounds', async () => {
    const pipe = await create(objectStoragePipe());
    const url = `${s.pipesUrl}/${pipe.id}/scaling`;
    const scaled = await s.request({ method: 'PATCH', url, body: { replicas: 5 } });
    expect(scaled.statusCode).toBe(200);
    expect(scaled.json.result.scaling).toEqual({ ...pipe.scaling, replicas: 5 });
    const bad = await s.request({ method: 'PATCH', url, body: { replicas: 0, replicaMemoryGb: 9 } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json.error).toBe(
      'BAD_REQUEST: replicas: Not between 1 and 40; replicaMemoryGb: Not between 0.5 and 8',
    );
    expect(bad.json.code).toBe('SLUICE_ERR_VALIDATION');
    const kafka = await create(kafkaPipe());
    const concurrency = await s.request({
      method: 'PATCH',
      url: `${s.pipesUrl}/${kafka.id}/scaling`,
      body: { concurrency: 3 },
    });
    expect(concurrency.statusCode).toBe(400);
    expect(concurrency.json.error).toContain('concurrency: Only used by object-storage pipes');
    expect(concurrency.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('settings: GET returns the flat map, PUT replaces it, {} resets to defaults', async () => {
    const pipe = await create(objectStoragePipe());
    const url = `${s.pipesUrl}/${pipe.id}/settings`;
    const read = await s.request({ method: 'GET', url });
    expect(read.statusCode).toBe(200);
    expect(read.json.result).toEqual(objectStoragePipe().settings);
    const put = await s.request({ method: 'PUT', url, body: { object_storage_concurrency: 8 } });
    expect(put.statusCode).toBe(200);
    expect(put.json.result).toEqual({ object_storage_concurrency: 8 });
    expect(
      (await s.request({ method: 'GET', url: `${s.pipesUrl}/${pipe.id}` })).json.result.settings,
    ).toEqual({
      object_storage_concurrency: 8,
    });
    const reset = await s.request({ method: 'PUT', url, body: {} });
    expect(reset.json.result).toEqual({});
    const bad = await s.request({ method: 'PUT', url, body: { engine_max_threads: -1, nope: 1 } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json.error).toBe(
      'BAD_REQUEST: nope: Unknown field: remove it or check its spelling; engine_max_threads: Not between 0 and 64',
    );
    expect(bad.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('DELETE removes the pipe and says so in the log; then it is 404', async () => {
    const pipe = await create(objectStoragePipe());
    const url = `${s.pipesUrl}/${pipe.id}`;
    const deleted = await s.request({ method: 'DELETE', url });
    expect(deleted.statusCode).toBe(200);
    expect(Object.keys(deleted.json).sort()).toEqual(['requestId', 'status']);
    expect(
      s.logs.some((line) => line.includes(pipe.id) && line.includes(`pipe ${pipe.name} is deleted`)),
    ).toBe(true);
    for (const [method, path] of [
      ['GET', url],
      ['DELETE', url],
      ['PATCH', `${url}/state`],
      ['GET', `${url}/settings`],
    ] as const) {
      const response = await s.request({
        method,
        url: path,
        ...(method === 'PATCH' ? { body: { command: 'stop' } } : {}),
      });
      expect(response.statusCode).toBe(404);
      expect(response.json.code).toBe('SLUICE_ERR_PIPE_NOT_FOUND');
    }
  });

  it('an id that is not a UUID is a 404, not an error', async () => {
    const response = await s.request({ method: 'GET', url: `${s.pipesUrl}/not-a-uuid` });
    expect(response.statusCode).toBe(404);
    expect(response.json.code).toBe('SLUICE_ERR_PIPE_NOT_FOUND');
    const service = await s.request({
      method: 'GET',
      url: `/v1/organizations/${s.organizationId}/services/nope/pipes`,
    });
    expect(service.statusCode).toBe(404);
    expect(service.json.code).toBe('SLUICE_ERR_SERVICE_NOT_FOUND');
  });
});
