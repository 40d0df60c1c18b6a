import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture } from './support/clients.js';
import { type RunningKinesis, startKinesisWithStream } from './support/kinesis.js';
import { sql, waitForState } from './support/runtime.js';
import { startSluice, type TestSluice } from './support/sluice.js';
import { waitFor } from './support/wait.js';

/**
 * Bodies as the hosted service's Terraform provider builds them (ClickHouse/terraform-provider-
 * clickhouse: internal/api/clickpipe_models.go for the JSON, internal/service/clickhouse/resource/
 * clickpipe.go for what Create and Update send and how Read compares), sent to a Sluice started as
 * a user runs it and read back the way the provider reads them.
 */
describe('what Terraform sends and reads back', () => {
  let s: TestSluice;
  let kinesis: RunningKinesis;
  beforeAll(async () => {
    // The Terraform Kinesis body's stream, on the tests' kinesalite (found the AWS SDK's own way).
    kinesis = await startKinesisWithStream('clicks');
    s = await startSluice({ runtime: true });
    await sql(s, 'CREATE DATABASE IF NOT EXISTS app');
    await sql(s, 'CREATE TABLE IF NOT EXISTS app.clicks (url String) ENGINE = MergeTree ORDER BY url');
  });
  afterAll(async () => {
    await s?.close();
    await kinesis?.stop();
  });

  it('a kinesis timestamp is answered in the form it was sent: Terraform decodes it into a string', async () => {
    const body = await fixture('terraform-kinesis-timestamp');
    const text = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(text.statusCode, text.body).toBe(200);
    // ClickPipeKinesisSource.Timestamp is a *string: a number here orphaned the pipe.
    expect(text.json.result.source.kinesis.timestamp).toBe('2026-01-01T00:00');
    const read = await s.request({ method: 'GET', url: `${s.pipesUrl}/${text.json.result.id}` });
    expect(read.json.result.source.kinesis.timestamp).toBe('2026-01-01T00:00');
    // The reader starts at that instant: the pipe runs (a timestamp it cannot read would fail it).
    await waitForState(s, text.json.result.id, 'Running');
    body.name = 'clicks by seconds';
    body.source.kinesis.timestamp = 1767225600;
    const seconds = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(seconds.json.result.source.kinesis.timestamp).toBe(1767225600);
    body.source.kinesis.timestamp = '2026-13-45T99:99';
    const bad = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(bad.statusCode).toBe(400);
    expect(bad.json.error).toContain('source.kinesis.timestamp');
    expect(bad.json.code).toBe('SLUICE_ERR_VALIDATION');
  });

  it('a kinesis update sends the whole source: equal timestamp and useEnhancedFanOut pass, a changed one is a 400 naming it', async () => {
    const body = await fixture('terraform-kinesis-timestamp');
    body.name = 'clicks rotated';
    const created = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(created.statusCode, created.body).toBe(200);
    const url = `${s.pipesUrl}/${created.json.result.id}`;
    // Update's body: every attribute but the unchanged access key (clickpipe.go, Update).
    const update = await fixture('terraform-kinesis-update');
    const rotated = await s.request({ method: 'PATCH', url, body: update });
    expect(rotated.statusCode, rotated.body).toBe(200);
    expect(rotated.json.result.source.kinesis.timestamp).toBe('2026-01-01T00:00');
    expect(rotated.body).not.toContain('ROTATED-KINESIS-SECRET');
    // The same instant in the other form is the same value.
    update.source.kinesis.timestamp = 1767225600;
    expect((await s.request({ method: 'PATCH', url, body: update })).statusCode).toBe(200);
    update.source.kinesis.useEnhancedFanOut = true;
    update.source.kinesis.timestamp = '2026-02-01T00:00';
    const changed = await s.request({ method: 'PATCH', url, body: update });
    expect(changed.statusCode).toBe(400);
    expect(changed.json.error).toContain('source.kinesis.useEnhancedFanOut: cannot change after create');
    expect(changed.json.error).toContain('source.kinesis.timestamp: cannot change after create');
    expect(changed.json.code).toBe('SLUICE_ERR_VALIDATION');
    const after = await s.request({ method: 'GET', url });
    expect(after.json.result.source.kinesis).not.toHaveProperty('useEnhancedFanOut');
  });

  it('no fieldMappings sent, none answered (Read compares them with the plan); columns fill by name', async () => {
    await mkdir(join(s.dataDir, 'files', 'tf'), { recursive: true });
    const body = await fixture('terraform-object-storage-create');
    expect(body).not.toHaveProperty('fieldMappings');
    const created = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(created.statusCode, created.body).toBe(200);
    // Read turns an empty list into null, which equals the plan's unset attribute.
    expect(created.json.result.fieldMappings).toEqual([]);
    const url = `${s.pipesUrl}/${created.json.result.id}`;
    expect((await s.request({ method: 'GET', url })).json.result.fieldMappings).toEqual([]);
    await writeFile(join(s.dataDir, 'files', 'tf', 'a.ndjson'), '{"id": 7, "name": "seven"}\n');
    const rows = await waitFor('the row', async () => {
      const found = await sql(s, 'SELECT id, name FROM default.tf_events');
      return found.length > 0 ? found : undefined;
    });
    expect(rows).toEqual([{ id: 7, name: 'seven' }]);
    // A rotation keeps them as sent; immutable fields sent equal pass, changed ones are 400s.
    const update = await fixture('terraform-object-storage-update');
    const rotated = await s.request({ method: 'PATCH', url, body: update });
    expect(rotated.statusCode, rotated.body).toBe(200);
    expect(rotated.json.result.fieldMappings).toEqual([]);
    update.source.objectStorage.url = 'file:///elsewhere/*.ndjson';
    update.source.objectStorage.isContinuous = false;
    const changed = await s.request({ method: 'PATCH', url, body: update });
    expect(changed.statusCode).toBe(400);
    expect(changed.json.error).toContain('source.objectStorage.url: cannot change after create');
    expect(changed.json.error).toContain('source.objectStorage.isContinuous: cannot change after create');
    expect(changed.json.code).toBe('SLUICE_ERR_VALIDATION');
    const after = await s.request({ method: 'GET', url });
    expect(after.json.result.source.objectStorage.url).toBe('file:///tf/*.ndjson');
  });

  it('primaryKey without sortingKey (sortingKey is sent as null) makes a table sorted by that key', async () => {
    await mkdir(join(s.dataDir, 'files', 'keyed'), { recursive: true });
    await writeFile(
      join(s.dataDir, 'files', 'keyed', 'a.ndjson'),
      '{"id": 2, "name": "b"}\n{"id": 1, "name": "a"}\n',
    );
    const body = await fixture('terraform-primary-key');
    expect(body.destination.tableDefinition.sortingKey).toBeNull();
    const created = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(created.statusCode, created.body).toBe(200);
    expect(created.json.result.destination.tableDefinition).toEqual({
      engine: { type: 'MergeTree' },
      primaryKey: 'id',
    });
    await waitForState(s, created.json.result.id, 'Completed');
    const [table] = await sql(
      s,
      "SELECT sorting_key, primary_key FROM system.tables WHERE database = 'default' AND name = 'keyed'",
    );
    expect(table).toEqual({ sorting_key: '(id)', primary_key: '(id)' });
    expect(await sql(s, 'SELECT id, name FROM default.keyed ORDER BY id')).toEqual([
      { id: 1, name: 'a' },
      { id: 2, name: 'b' },
    ]);
  });

  it('a postgres update sends the whole object with every computed setting: equal ones pass, the sync interval applies, a fixed one is a 400 saying why', async () => {
    // Its sample names a server that does not exist, which a running Sluice's checks refuse.
    const rulesOnly = await startSluice({ runtime: false });
    try {
      const created = await rulesOnly.request({
        method: 'POST',
        url: rulesOnly.pipesUrl,
        body: await fixture('cli-postgres-mappings'),
      });
      expect(created.statusCode, created.body).toBe(200);
      const url = `${rulesOnly.pipesUrl}/${created.json.result.id}`;
      const update = await fixture('terraform-postgres-update');
      const same = await rulesOnly.request({ method: 'PATCH', url, body: update });
      expect(same.statusCode, same.body).toBe(200);
      update.source.postgres.settings.syncIntervalSeconds = 10;
      const faster = await rulesOnly.request({ method: 'PATCH', url, body: update });
      expect(faster.statusCode, faster.body).toBe(200);
      expect(faster.json.result.source.postgres.settings.syncIntervalSeconds).toBe(10);
      update.source.postgres.settings.deleteOnMerge = true;
      update.source.postgres.settings.replicationMode = 'snapshot';
      const fixed = await rulesOnly.request({ method: 'PATCH', url, body: update });
      expect(fixed.statusCode).toBe(400);
      expect(fixed.json.error).toContain(
        'source.postgres.settings.deleteOnMerge: cannot change after create (it is false): the target tables were made with it',
      );
      expect(fixed.json.error).toContain(
        'source.postgres.settings.replicationMode: cannot change after create',
      );
      expect(fixed.json.code).toBe('SLUICE_ERR_VALIDATION');
      const after = await rulesOnly.request({ method: 'GET', url });
      expect(after.json.result.source.postgres.settings.replicationMode).toBe('cdc');
    } finally {
      await rulesOnly.close();
    }
  });
});
