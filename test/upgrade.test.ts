import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createPipe, sql, waitForState } from './support/runtime.js';
import { startSluice } from './support/sluice.js';

// A data directory an earlier Sluice wrote: every table it made, and every stage, kept
// `non_replicated_deduplication_window = 1000`, which drops an insert equal to a recent one. The
// first start of this version resets it on those tables (README, "Upgrading").

describe('upgrading a data directory whose tables deduplicate equal inserts', () => {
  let dataDir: string;
  afterAll(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('resets the old window on the tables Sluice made (stages included), keeps a user’s own, and every equal file lands', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sluice-upgrade-'));
    await mkdir(join(dataDir, 'files/up'), { recursive: true });
    for (const name of ['a', 'b'])
      await writeFile(join(dataDir, 'files/up', `${name}.ndjson`), '{"id": 1}\n{"id": 2}\n');

    // As the earlier Sluice left things: the pipe's table and its slot's stage made with the
    // window (the runtime off, so this start does not look at them), a user's table and a copy.
    const before = await startSluice({ dataDir, runtime: false });
    const pipeId = await createPipe(before, {
      name: 'upgraded',
      source: { objectStorage: { format: 'JSONEachRow', url: 'file:///up/*.ndjson' } },
      destination: {
        database: 'up',
        table: 'rows',
        tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
        columns: [{ name: 'id', type: 'UInt64' }],
      },
    });
    const old = 'SETTINGS non_replicated_deduplication_window = 1000';
    await sql(before, 'CREATE DATABASE up');
    await sql(before, `CREATE TABLE up.rows (\`id\` UInt64) ENGINE = MergeTree ORDER BY (\`id\`) ${old}`);
    await sql(before, 'CREATE DATABASE _sluice_staging');
    await sql(before, `CREATE TABLE _sluice_staging.stage_${pipeId.replace(/-/g, '')}_0 AS up.rows`);
    await sql(before, 'CREATE DATABASE mine');
    await sql(
      before,
      'CREATE TABLE mine.kept (id UInt64) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 500',
    );
    await sql(before, 'CREATE TABLE mine.copied AS up.rows');
    await before.close({ keepData: true });

    const after = await startSluice({ dataDir });
    try {
      await waitForState(after, pipeId, 'Completed');
      expect(
        await sql(after, 'SELECT id, toUInt32(count()) AS n FROM up.rows GROUP BY id ORDER BY id'),
      ).toEqual([
        { id: 1, n: 2 },
        { id: 2, n: 2 },
      ]);
      const settings = await sql(
        after,
        `SELECT database, name, match(engine_full, 'deduplication_window = [1-9]') AS deduplicates FROM system.tables
          WHERE database IN ('up', 'mine', '_sluice_staging') ORDER BY database, name`,
      );
      expect(settings.filter((t) => t.deduplicates).map((t) => `${t.database}.${t.name}`)).toEqual([
        'mine.kept',
      ]);
      const insert = 'INSERT INTO mine.copied VALUES (9)';
      await sql(after, insert);
      await sql(after, insert);
      expect(await sql(after, 'SELECT count() AS n FROM mine.copied')).toEqual([{ n: 2 }]);
      const warned = after.logs.find((line) => line.includes('non_replicated_deduplication_window = 1000'));
      expect(warned).toBeDefined();
      expect(JSON.parse(warned as string).tables).toEqual(
        expect.arrayContaining([
          'up.rows',
          'mine.copied',
          `_sluice_staging.stage_${pipeId.replace(/-/g, '')}_0`,
        ]),
      );
    } finally {
      await after.close();
    }
  });
});
