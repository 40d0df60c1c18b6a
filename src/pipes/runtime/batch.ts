import { createHash } from 'node:crypto';
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
  /** Tells the stages of the tables of a pipe that writes several apart; '' for a pipe's one table. */
  stageSuffix: string;
}

/** The stage suffix of one of several tables a pipe writes: stable whatever else the pipe writes. */
export function stageSuffixOf(table: string): string {
  return `_${createHash('sha256').update(table).digest('hex').slice(0, 12)}`;
}

/**
 * Reads exactly a batch's range (without its skipped parts) into `into` (a pipe of several tables:
 * each into `intoTable(table)`, a staging table when `staged(table)`); returns its bad records.
 */
export type RangeReader = (
  batch: Batch,
  into: string,
  intoTable: (table: string) => string,
  staged: (table: string) => boolean,
) => Promise<BadRecord[]>;

/** The staging tables of one worker slot of a pipe (each slot stages its own batch). */
export function stageNames(pipeId: string, slot: number, suffix = '') {
  const id = pipeId.replace(/-/g, '');
  return { data: `stage_${id}_${slot}${suffix}`, errors: `stage_errors_${id}_${slot}${suffix}` };
}

/**
 * Creates a slot's staging tables with the definitions of the destination and its error table, and
 * makes them again (when empty) after the destination changed shape: a stage must match its
 * destination for its partitions to move.
 */
export async function ensureStages(engine: Engine, destination: Destination, pipeId: string, slot: number) {
  const names = stageNames(pipeId, slot, destination.stageSuffix);
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

/** The columns of the destinations and their error tables, as one string: one query, not six. */
async function shapeOf(engine: Engine, destinations: readonly Destination[]): Promise<string> {
  const tables = destinations.flatMap((d) => [
    `(${literal(d.database)}, ${literal(d.table)})`,
    `(${literal(d.database)}, ${literal(d.errorTable)})`,
  ]);
  const result = await engine.query(
    `SELECT database, table, name, type, default_kind, default_expression FROM system.columns
      WHERE (database, table) IN (${tables.join(', ')})
      ORDER BY database, table, position`,
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
     * Per slot, the destinations' shape (their columns) when its stages were last checked in this
     * run: a stream's small batches check the stages again only after a destination changed.
     */
    stagesChecked?: Map<number, string>;
  },
  destinations: readonly Destination[],
  claimed: Batch,
  read: RangeReader,
): Promise<Batch> {
  const { engine, store, stagesChecked } = context;
  const batch = { ...claimed };
  const staged = destinations.filter((d) => d.staged);
  const stages = (d: Destination) => stageNames(batch.pipeId, batch.slot, d.stageSuffix);
  const stage = (name: string) => tableName(STAGING_DATABASE, name);
  if (staged.length > 0) {
    const shape = await shapeOf(engine, staged);
    if (stagesChecked?.get(batch.slot) !== shape) {
      for (const destination of staged) await ensureStages(engine, destination, batch.pipeId, batch.slot);
      stagesChecked?.set(batch.slot, shape);
    }
  }
  const main = destinations[0] as Destination;
  const byTable = new Map(destinations.map((d) => [d.table, d]));
  const destinationOf = (table: string | undefined) => {
    const found = table === undefined ? main : byTable.get(table);
    if (!found)
      throw new PermanentError(`the source wrote to ${table}, which is not one of the pipe's tables`);
    return found;
  };
  const into = (d: Destination) => (d.staged ? stage(stages(d).data) : tableName(d.database, d.table));
  const errorsInto = (d: Destination) =>
    d.staged ? stage(stages(d).errors) : tableName(d.database, d.errorTable);
  while (!batch.staged) {
    for (const destination of staged) {
      await engine.execute(`TRUNCATE TABLE ${stage(stages(destination).data)}`);
      await engine.execute(`TRUNCATE TABLE ${stage(stages(destination).errors)}`);
    }
    try {
      const bad = await read(
        batch,
        into(main),
        (table) => into(destinationOf(table)),
        (table) => destinationOf(table).staged,
      );
      bad.push(...batch.skipped.map((s) => ({ source: s.key, row: 0, error: s.error, raw: '' })));
      for (const destination of destinations) {
        const mine = bad.filter((record) => destinationOf(record.table) === destination);
        await insertBadRecords(engine, errorsInto(destination), batch.pipeId, mine);
      }
      let rows = 0;
      for (const destination of staged)
        rows += await countRows(engine, STAGING_DATABASE, stages(destination).data);
      batch.rows = rows;
      batch.badRecords = bad.length;
      batch.staged = true;
      await store.repos.progress.setStaged(batch);
    } catch (error) {
      if (!(error instanceof UnreadablePartError)) throw error;
      batch.skipped = [...batch.skipped, { key: error.key, error: error.message }];
      await store.repos.progress.setSkipped(batch);
    }
  }
  for (const destination of staged) {
    const names = stages(destination);
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
