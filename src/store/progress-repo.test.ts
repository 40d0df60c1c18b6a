import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPglite } from './db.js';
import { migrate } from './migrations.js';
import { ProgressRepo } from './progress-repo.js';

describe('ProgressRepo.failedWithCodes', () => {
  const dirs: string[] = [];
  afterAll(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

  it('lists only the Failed pipes, each with its last error code, in one statement', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-progress-'));
    dirs.push(dir);
    const db = await openPglite(dir);
    try {
      await migrate(db);
      const [org] = await db.query<{ id: string }>(
        "insert into organizations (id, name, created_at) values (gen_random_uuid(), 'o', now()) returning id",
      );
      const [service] = await db.query<{ id: string }>(
        "insert into services (id, organization_id, name, kind, created_at) values (gen_random_uuid(), $1, 's', 'embedded', now()) returning id",
        [org?.id],
      );
      const pipe = async (name: string, state: string, at: string) => {
        const [row] = await db.query<{ id: string }>(
          `insert into pipes (id, organization_id, service_id, name, source_kind, state, config, created_at, updated_at)
           values (gen_random_uuid(), $1, $2, $3, 'kafka', $4, '{}'::jsonb, $5::timestamptz, now()) returning id`,
          [org?.id, service?.id, name, state, at],
        );
        return row?.id as string;
      };
      const withCode = await pipe('failed-with-code', 'Failed', '2026-01-01T00:00:00Z');
      const noProgress = await pipe('failed-without-progress', 'Failed', '2026-01-01T00:00:01Z');
      const running = await pipe('running-with-code', 'Running', '2026-01-01T00:00:02Z');
      const repo = new ProgressRepo(db);
      await repo.recordError(withCode, 'auth failed', 'SLUICE_ERR_SOURCE_AUTH_REFUSED');
      await repo.recordError(running, 'was down', 'SLUICE_ERR_SOURCE');

      expect(await repo.failedWithCodes()).toEqual([
        { pipeId: withCode, errorCode: 'SLUICE_ERR_SOURCE_AUTH_REFUSED' },
        { pipeId: noProgress, errorCode: '' },
      ]);
    } finally {
      await db.close();
    }
  });
});
