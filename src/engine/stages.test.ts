import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedEngine } from './chdb/embedded-engine.js';
import {
  isOldStage,
  moveCheckSql,
  resetOldDeduplicationSql,
  settingsOf,
  stageTableSql,
  tableStorage,
  tablesWithOldDeduplication,
} from './stages.js';

/** Destinations of every MergeTree kind and key a user may write: each must take its stage's moves. */
const TARGETS = [
  'ENGINE = MergeTree ORDER BY id',
  'ENGINE = MergeTree ORDER BY (id, name) PRIMARY KEY id',
  'ENGINE = MergeTree ORDER BY tuple()',
  'ENGINE = MergeTree PARTITION BY name ORDER BY id',
  'ENGINE = MergeTree PARTITION BY (name, id % 2) ORDER BY (name, intHash32(id)) SAMPLE BY intHash32(id)',
  "ENGINE = MergeTree ORDER BY id TTL toDateTime(version) + INTERVAL 100 YEAR SETTINGS index_granularity = 512, storage_policy = 'default'",
  'ENGINE = ReplacingMergeTree(version) ORDER BY id SETTINGS non_replicated_deduplication_window = 1000',
  'ENGINE = SummingMergeTree((version)) ORDER BY name',
  'ENGINE = CollapsingMergeTree(sign) ORDER BY id',
  // The engine adds the version to this one's sorting key, which the stage must not repeat.
  'ENGINE = VersionedCollapsingMergeTree(sign, version) ORDER BY id',
  'ENGINE = MergeTree ORDER BY (id DESC, name) SETTINGS allow_experimental_reverse_key = 1',
];

describe('stages (chDB): a plain MergeTree of the target’s shape that keeps every row', () => {
  let dir: string;
  let engine: EmbeddedEngine;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-stages-'));
    engine = new EmbeddedEngine(join(dir, 'engine'), { confined: false });
    await engine.execute('CREATE DATABASE t');
  });
  afterAll(async () => {
    await engine.close();
    await rm(dir, { recursive: true, force: true });
  });

  it.each(TARGETS.map((definition, i) => [i, definition]))(
    'target %i (%s): equal blocks are both staged, nothing folds, every partition moves',
    async (i, definition) => {
      const [target, stage] = [`t.target_${i}`, `t.stage_${i}`];
      await engine.execute(
        `CREATE TABLE ${target} (id UInt64, name String, version UInt64, sign Int8, INDEX byname name TYPE bloom_filter GRANULARITY 1) ${definition}`,
      );
      const storage = await tableStorage(engine, 't', `target_${i}`);
      await engine.execute(stageTableSql(stage, target, storage as NonNullable<typeof storage>));
      await engine.execute(moveCheckSql(stage, target));
      const block = `INSERT INTO ${stage} VALUES (1, 'a', 1, 1), (1, 'a', 1, 1), (2, 'b', 2, 1)`;
      await engine.execute(block);
      await engine.execute(block);
      expect(await engine.query(`SELECT count() AS n FROM ${stage}`)).toMatchObject({ rows: [{ n: 6 }] });
      const parts = await engine.query(
        `SELECT DISTINCT partition_id FROM system.parts WHERE database = 't' AND table = 'stage_${i}' AND active`,
      );
      for (const row of parts.rows)
        await engine.execute(
          `ALTER TABLE ${stage} MOVE PARTITION ID '${row.partition_id}' TO TABLE ${target}`,
        );
      expect(await engine.query(`SELECT count() AS n FROM ${stage}`)).toMatchObject({ rows: [{ n: 0 }] });
      // Counted before the target's own engine merges anything.
      const moved = await engine.query(
        `SELECT sum(rows) AS n FROM system.parts WHERE database = 't' AND table = 'target_${i}' AND active`,
      );
      expect(moved.rows[0]?.n).toBe(6);
      const made = await tableStorage(engine, 't', `stage_${i}`);
      expect(made && isOldStage(made)).toBe(false);
    },
  );

  it('finds the tables an earlier Sluice made with its window, and resets exactly those', async () => {
    await engine.execute('CREATE DATABASE old');
    await engine.execute(
      'CREATE TABLE old.made (id UInt64) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 1000',
    );
    await engine.execute(
      'CREATE TABLE old.own (id UInt64) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 10000',
    );
    const found = await tablesWithOldDeduplication(engine);
    expect(found.filter((t) => t.database === 'old')).toEqual([{ database: 'old', table: 'made' }]);
    await engine.execute(resetOldDeduplicationSql('old', 'made'));
    await engine.execute('INSERT INTO old.made VALUES (1)');
    await engine.execute('INSERT INTO old.made VALUES (1)');
    expect(await engine.query('SELECT count() AS n FROM old.made')).toMatchObject({ rows: [{ n: 2 }] });
    expect((await tablesWithOldDeduplication(engine)).filter((t) => t.database === 'old')).toEqual([]);
  });

  it('a stage that cannot move into its target fails the move check, before anything is staged', async () => {
    await engine.execute('CREATE TABLE t.keyed (id UInt64) ENGINE = MergeTree ORDER BY id');
    await engine.execute('CREATE TABLE t.other (id UInt64) ENGINE = MergeTree ORDER BY tuple()');
    await expect(engine.execute(moveCheckSql('t.other', 't.keyed'))).rejects.toThrow(/different ordering/);
  });

  it('reads the settings of an engine_full, quotes and commas included', () => {
    expect(
      settingsOf("MergeTree ORDER BY (a, b) SETTINGS storage_policy = 'x, y', index_granularity = 8192"),
    ).toEqual(["storage_policy = 'x, y'", 'index_granularity = 8192']);
    expect(settingsOf('Null')).toEqual([]);
  });
});
