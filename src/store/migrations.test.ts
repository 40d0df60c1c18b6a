import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPglite } from './db.js';
import { EvaluationRepo } from './evaluation-repo.js';
import { MIGRATIONS, migrate } from './migrations.js';
import { ProgressRepo } from './progress-repo.js';

describe('migration 8: batches claim ranges, pipes keep a cursor', () => {
  const dirs: string[] = [];
  afterAll(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

  it('turns an open batch of files and a last key from before into a range and a cursor', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-migration-'));
    dirs.push(dir);
    const db = await openPglite(dir);
    try {
      // The store as version 7 left it, with a pipe mid-ingestion.
      await db.exec(
        'create table sluice_migrations (version integer primary key, name text not null, applied_at timestamptz not null)',
      );
      for (const migration of MIGRATIONS.filter((m) => m.version <= 7)) {
        await db.exec(migration.sql);
        await db.query('insert into sluice_migrations values ($1, $2, now())', [
          migration.version,
          migration.name,
        ]);
      }
      const [org] = await db.query<{ id: string }>(
        "insert into organizations (id, name, created_at) values (gen_random_uuid(), 'o', now()) returning id",
      );
      const [service] = await db.query<{ id: string }>(
        "insert into services (id, organization_id, name, kind, created_at) values (gen_random_uuid(), $1, 's', 'embedded', now()) returning id",
        [org?.id],
      );
      const [pipe] = await db.query<{ id: string }>(
        `insert into pipes (id, organization_id, service_id, name, source_kind, state, config, created_at, updated_at)
         values (gen_random_uuid(), $1, $2, 'p', 'objectStorage', 'Running', '{}'::jsonb, now(), now()) returning id`,
        [org?.id, service?.id],
      );
      const pipeId = pipe?.id as string;
      await db.query(
        "insert into pipe_progress (pipe_id, last_key, updated_at) values ($1, 'logs/b.ndjson', now())",
        [pipeId],
      );
      await db.query(
        `insert into pipe_batches (pipe_id, seq, slot, files, staged)
         values ($1, 1, 0, '[{"key": "logs/a.ndjson", "size": 10}, {"key": "logs/b.ndjson", "size": 32}]'::jsonb, true)`,
        [pipeId],
      );

      expect(await migrate(db)).toEqual(MIGRATIONS.filter((m) => m.version > 7).map((m) => m.version));
      const progress = new ProgressRepo(db);
      expect((await progress.get(pipeId))?.cursor).toBe('logs/b.ndjson');
      const [batch] = await progress.openBatches(pipeId);
      expect(batch).toMatchObject({
        range: {
          files: [
            { key: 'logs/a.ndjson', size: 10 },
            { key: 'logs/b.ndjson', size: 32 },
          ],
        },
        files: 2,
        bytes: 42,
        staged: true,
      });
    } finally {
      await db.close();
    }
  });
});

describe('migration 15: alert history without a foreign key', () => {
  const dirs: string[] = [];
  afterAll(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

  it("an alert's history goes with it, by its own delete or its dashboard's or team's; none is written for a missing alert", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-migration-'));
    dirs.push(dir);
    const db = await openPglite(dir);
    try {
      await migrate(db);
      await db.exec(`
        insert into organizations values ('00000000-0000-0000-0000-00000000000a', 'o', false, now());
        insert into teams values ('00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-00000000000a', 't1', now()),
                                 ('00000000-0000-0000-0000-0000000000a2', '00000000-0000-0000-0000-00000000000a', 't2', now());
        insert into webhooks (id, team_id, name, url, created_at, updated_at)
          values ('w1', '00000000-0000-0000-0000-0000000000a1', 'w', 'http://x', now(), now()),
                 ('w2', '00000000-0000-0000-0000-0000000000a2', 'w', 'http://x', now(), now());
        insert into dashboards (id, team_id, name, tags, tiles, created_at, updated_at)
          values ('d1', '00000000-0000-0000-0000-0000000000a1', 'd', '[]', '[]', now(), now()),
                 ('d2', '00000000-0000-0000-0000-0000000000a1', 'd', '[]', '[]', now(), now()),
                 ('d3', '00000000-0000-0000-0000-0000000000a2', 'd', '[]', '[]', now(), now());
        insert into alerts (id, team_id, threshold, interval, threshold_type, source, state, dashboard_id, tile_id, webhook_id, created_at, updated_at)
          values ('kept', '00000000-0000-0000-0000-0000000000a1', 1, '5m', 'above', 'tile', 'OK', 'd1', 't', 'w1', now(), now()),
                 ('deleted', '00000000-0000-0000-0000-0000000000a1', 1, '5m', 'above', 'tile', 'OK', 'd1', 't', 'w1', now(), now()),
                 ('on-dashboard', '00000000-0000-0000-0000-0000000000a1', 1, '5m', 'above', 'tile', 'OK', 'd2', 't', 'w1', now(), now()),
                 ('on-team', '00000000-0000-0000-0000-0000000000a2', 1, '5m', 'above', 'tile', 'OK', 'd3', 't', 'w2', now(), now());
      `);
      const repo = new EvaluationRepo(db);
      const row = (alertId: string) => ({
        alertId,
        windowStart: new Date('2026-11-28T10:00:00Z'),
        windowEnd: new Date('2026-11-28T10:05:00Z'),
        groupKey: null,
        state: 'OK',
        value: 1,
        threshold: 1,
        error: null,
        createdAt: new Date(),
      });
      await repo.addHistory(['kept', 'deleted', 'on-dashboard', 'on-team', 'never-existed'].map(row));
      const alertsWithHistory = async () =>
        (
          await db.query<{ alertId: string }>(
            'select distinct alert_id as "alertId" from alert_history order by 1',
          )
        ).map((r) => r.alertId);
      expect(await alertsWithHistory()).toEqual(['deleted', 'kept', 'on-dashboard', 'on-team']);

      await db.exec(`
        delete from alerts where id = 'deleted';
        delete from dashboards where id = 'd2';
        delete from teams where id = '00000000-0000-0000-0000-0000000000a2';
      `);
      expect(await alertsWithHistory()).toEqual(['kept']);
    } finally {
      await db.close();
    }
  });
});
