import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPglite } from './db.js';
import { migrate } from './migrations.js';
import { ProgressRepo } from './progress-repo.js';

const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

/** A migrated store in a fresh directory, with one organization and service to hang pipes on. */
async function openStore() {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-progress-'));
  dirs.push(dir);
  const db = await openPglite(dir);
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
  return { db, pipe };
}

describe('ProgressRepo.claim', () => {
  it('from a cursor that moved meanwhile (another run of the pipe claimed): refused, and nothing of it kept', async () => {
    const { db, pipe } = await openStore();
    try {
      const id = await pipe('two-runs', 'Running', '2026-01-01T00:00:00Z');
      const repo = new ProgressRepo(db);
      await repo.ensure(id, null);
      const claim = (cursor: string) => ({ range: { to: cursor }, files: 1, bytes: 1, skipped: [], cursor });
      const inTx = (work: (tx: ProgressRepo) => Promise<unknown>) =>
        db.transaction((tx) => work(new ProgressRepo(tx)));
      // Both runs read the cursor null; the first claims a.json, the second then claims from null too.
      await inTx((tx) => tx.claim(id, 0, claim('a.json'), { cursor: null }));
      const second = inTx((tx) => tx.claim(id, 0, claim('a.json'), { cursor: null }));
      await expect(second).rejects.toMatchObject({ code: 'SLUICE_ERR_CURSOR_MOVED' });
      expect((await repo.openBatches(id)).map((b) => b.range)).toEqual([{ to: 'a.json' }]);
      expect((await repo.get(id))?.cursor).toBe('a.json');
      // From where the first left it, the claim goes through; without `after`, as before.
      await inTx((tx) => tx.claim(id, 1, claim('b.json'), { cursor: 'a.json' }));
      await inTx((tx) => tx.claim(id, 0, claim('c.json')));
      expect((await repo.get(id))?.cursor).toBe('c.json');
    } finally {
      await db.close();
    }
  });

  it('from a cursor a failed setup left as SQL null (recordError before ensure): taken as null', async () => {
    const { db, pipe } = await openStore();
    try {
      const id = await pipe('setup-failed', 'Running', '2026-01-01T00:00:00Z');
      const repo = new ProgressRepo(db);
      await repo.recordError(id, 'setup failed', 'SLUICE_ERR_SOURCE');
      const claimed = await db.transaction((tx) =>
        new ProgressRepo(tx).claim(
          id,
          0,
          { range: {}, files: 0, bytes: 0, skipped: [], cursor: 'x' },
          { cursor: null },
        ),
      );
      expect(claimed.seq).toBe(1);
    } finally {
      await db.close();
    }
  });
});

describe('ProgressRepo.failedWithCodes', () => {
  it('lists only the Failed pipes, each with its last error code, in one statement', async () => {
    const { db, pipe } = await openStore();
    try {
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
