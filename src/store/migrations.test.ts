import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPglite } from './db.js';
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
