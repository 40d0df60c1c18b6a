import { countRows, describeTable, type Engine, literal, tableName } from '../../engine/index.js';
import type { Batch, Store } from '../../store/index.js';
import { type BadRecord, insertBadRecords, PermanentError, UnreadablePartError } from '../records/index.js';

/** Staging tables live apart from the user's databases. */
export const STAGING_DATABASE = '_sluice_staging';

export interface Destination {
  database: string;
  table: string;
  errorTable: string;
  /** False for a Null destination: nothing is kept, so nothing is staged. */
  staged: boolean;
}

/** Reads exactly a batch's range (without its skipped parts) into `into`; returns its bad records. */
export type RangeReader = (batch: Batch, into: string) => Promise<BadRecord[]>;

/** The staging tables of one worker slot of a pipe (each slot stages its own batch). */
export function stageNames(pipeId: string, slot: number) {
  const id = pipeId.replace(/-/g, '');
  return { data: `stage_${id}_${slot}`, errors: `stage_errors_${id}_${slot}` };
}

/**
 * Creates a slot's staging tables with the definitions of the destination and its error table, and
 * makes them again (when empty) after the destination changed shape: a stage must match its
 * destination for its partitions to move.
 */
export async function ensureStages(engine: Engine, destination: Destination, pipeId: string, slot: number) {
  const names = stageNames(pipeId, slot);
  const pairs = [
    [names.data, destination.table],
    [names.errors, destination.errorTable],
  ] as const;
  for (const [stage, target] of pairs) {
    const [stageColumns, targetColumns] = await Promise.all([
      describeTable(engine, STAGING_DATABASE, stage),
      describeTable(engine, destination.database, target),
    ]);
    if (stageColumns && JSON.stringify(stageColumns) !== JSON.stringify(targetColumns)) {
      if ((await countRows(engine, STAGING_DATABASE, stage)) > 0) {
        throw new PermanentError(
          `${destination.database}.${target} changed shape while a batch was staged for it: put the columns back, or delete and create the pipe again`,
        );
      }
      await engine.execute(`DROP TABLE ${tableName(STAGING_DATABASE, stage)}`);
    }
    await engine.execute(
      `CREATE TABLE IF NOT EXISTS ${tableName(STAGING_DATABASE, stage)} AS ${tableName(destination.database, target)}`,
    );
  }
}

/** The columns of the destination and its error table, as one string: one query, not six. */
async function shapeOf(engine: Engine, destination: Destination): Promise<string> {
  const result = await engine.query(
    `SELECT table, name, type, default_kind, default_expression FROM system.columns
      WHERE database = ${literal(destination.database)} AND table IN (${literal(destination.table)}, ${literal(destination.errorTable)})
      ORDER BY table, position`,
  );
  return JSON.stringify(result.rows);
}

/**
 * Takes a claimed batch to committed (DESIGN.md, "Checkpoints and exactly-once"): read into its
 * slot's emptied staging tables, marked staged, moved partition by partition into the destination
 * and its error table, committed. A crash before `staged` reads the batch again; a crash after it
 * only finishes the moves, since what moved is gone from the stage. Returns the batch as
 * committed (its rows and bad records counted).
 */
export async function completeBatch(
  context: {
    engine: Engine;
    store: Store;
    /**
     * Per slot, the destination's shape (its columns) when its stages were last checked in this
     * run: a stream's small batches check the stages again only after the destination changed.
     */
    stagesChecked?: Map<number, string>;
  },
  destination: Destination,
  claimed: Batch,
  read: RangeReader,
): Promise<Batch> {
  const { engine, store, stagesChecked } = context;
  const batch = { ...claimed };
  const names = stageNames(batch.pipeId, batch.slot);
  const stage = (name: string) => tableName(STAGING_DATABASE, name);
  if (destination.staged) {
    const shape = await shapeOf(engine, destination);
    if (stagesChecked?.get(batch.slot) !== shape) {
      await ensureStages(engine, destination, batch.pipeId, batch.slot);
      stagesChecked?.set(batch.slot, shape);
    }
  }
  while (!batch.staged) {
    if (destination.staged) {
      await engine.execute(`TRUNCATE TABLE ${stage(names.data)}`);
      await engine.execute(`TRUNCATE TABLE ${stage(names.errors)}`);
    }
    try {
      const into = destination.staged
        ? stage(names.data)
        : tableName(destination.database, destination.table);
      const bad = await read(batch, into);
      bad.push(...batch.skipped.map((s) => ({ source: s.key, row: 0, error: s.error, raw: '' })));
      const errorsInto = destination.staged
        ? stage(names.errors)
        : tableName(destination.database, destination.errorTable);
      await insertBadRecords(engine, errorsInto, batch.pipeId, bad);
      batch.rows = destination.staged ? await countRows(engine, STAGING_DATABASE, names.data) : 0;
      batch.badRecords = bad.length;
      batch.staged = true;
      await store.repos.progress.setStaged(batch);
    } catch (error) {
      if (!(error instanceof UnreadablePartError)) throw error;
      batch.skipped = [...batch.skipped, { key: error.key, error: error.message }];
      await store.repos.progress.setSkipped(batch);
    }
  }
  if (destination.staged) {
    await movePartitions(engine, names.data, tableName(destination.database, destination.table));
    await movePartitions(engine, names.errors, tableName(destination.database, destination.errorTable));
  }
  await store.transaction((repos) => repos.progress.commit(batch, new Date()));
  return batch;
}

/** Moves every partition of a staging table into `to`; what moved is gone from the stage. */
async function movePartitions(engine: Engine, stage: string, to: string): Promise<void> {
  const parts = await engine.query(
    `SELECT DISTINCT partition_id FROM system.parts WHERE database = ${literal(STAGING_DATABASE)} AND table = ${literal(stage)} AND active`,
  );
  for (const row of parts.rows) {
    await engine.execute(
      `ALTER TABLE ${tableName(STAGING_DATABASE, stage)} MOVE PARTITION ID ${literal(String(row.partition_id))} TO TABLE ${to}`,
    );
  }
}

/** Drops every staging table of a pipe (all its slots). */
export async function dropStages(engine: Engine, pipeId: string): Promise<void> {
  const id = pipeId.replace(/-/g, '');
  const tables = await engine.query(
    `SELECT name FROM system.tables WHERE database = ${literal(STAGING_DATABASE)} AND (name LIKE ${literal(`stage_${id}_%`)} OR name LIKE ${literal(`stage_errors_${id}_%`)})`,
  );
  for (const row of tables.rows) {
    await engine.execute(`DROP TABLE IF EXISTS ${tableName(STAGING_DATABASE, String(row.name))}`);
  }
}
