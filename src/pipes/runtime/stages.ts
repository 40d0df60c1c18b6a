import { createHash } from 'node:crypto';
import {
  countRows,
  describeTable,
  type Engine,
  EngineError,
  isOldStage,
  literal,
  moveCheckSql,
  OLD_DEDUPLICATION_SETTING,
  stageTableSql,
  tableName,
  tableStorage,
} from '../../engine/index.js';
import { PermanentError } from '../records/index.js';

/** Staging tables live apart from the user's databases. */
export const STAGING_DATABASE = '_sluice_staging';

/** A table a pipe writes, beside its error table (runtime/destination.ts makes them). */
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

/** A pipe's id as its staging tables' names hold it. */
const stageId = (pipeId: string) => pipeId.replace(/-/g, '');

/** The staging tables of one worker slot of a pipe (each slot stages its own batch). */
export function stageNames(pipeId: string, slot: number, suffix = '') {
  const id = stageId(pipeId);
  return { data: `stage_${id}_${slot}${suffix}`, errors: `stage_errors_${id}_${slot}${suffix}` };
}

/** A stage's qualified name. */
export function stageTable(name: string): string {
  return tableName(STAGING_DATABASE, name);
}

/**
 * Makes a slot's staging tables for the destination and its error table (stageTableSql: the
 * target's shape, a plain MergeTree that keeps every row), anew whenever they may be: a stage is
 * emptied before each batch is read, so one that is empty, or whose batch is not staged yet, is
 * dropped and made again from the destination as it is now (its columns, keys and settings may
 * have changed, or an earlier Sluice made it of the destination's engine, deduplicating). Only a
 * stage holding a staged batch is kept, for that batch's moves; an old one loses its
 * deduplication window and is made anew after them (the answer, true, says so). A stage that
 * could not move into its destination fails the pipe before anything is staged.
 */
export async function ensureStages(
  engine: Engine,
  destination: Destination,
  pipeId: string,
  slot: number,
  batchStaged: boolean,
): Promise<boolean> {
  const names = stageNames(pipeId, slot, destination.stageSuffix);
  const pairs = [
    [names.data, destination.table],
    [names.errors, destination.errorTable],
  ] as const;
  let keptOld = false;
  for (const [stage, target] of pairs) {
    const [stageStorage, targetStorage] = await Promise.all([
      tableStorage(engine, STAGING_DATABASE, stage),
      tableStorage(engine, destination.database, target),
    ]);
    const into = tableName(destination.database, target);
    if (!targetStorage?.engine.endsWith('MergeTree')) {
      throw new PermanentError(
        `${destination.database}.${target} is a ${targetStorage?.engine ?? 'missing'} table: a pipe writes into a table of the MergeTree family (or Null)`,
      );
    }
    if (stageStorage && batchStaged && (await countRows(engine, STAGING_DATABASE, stage)) > 0) {
      const [stageColumns, targetColumns] = await Promise.all([
        describeTable(engine, STAGING_DATABASE, stage),
        describeTable(engine, destination.database, target),
      ]);
      if (JSON.stringify(stageColumns) !== JSON.stringify(targetColumns)) {
        throw new PermanentError(
          `${destination.database}.${target} changed shape while a batch was staged for it: put the columns back, or delete and create the pipe again`,
        );
      }
      if (isOldStage(stageStorage)) {
        await engine.execute(
          `ALTER TABLE ${stageTable(stage)} MODIFY SETTING ${OLD_DEDUPLICATION_SETTING} = 0`,
        );
        keptOld = true;
      }
      continue;
    }
    if (stageStorage) await engine.execute(`DROP TABLE ${stageTable(stage)}`);
    await engine.execute(stageTableSql(stageTable(stage), into, targetStorage));
    try {
      await engine.execute(moveCheckSql(stageTable(stage), into));
    } catch (error) {
      if (!(error instanceof EngineError)) throw error;
      throw new PermanentError(
        `a batch staged for ${destination.database}.${target} could not be moved into it (${error.message}); its definition is one Sluice cannot stage for yet`,
      );
    }
  }
  return keptOld;
}

/**
 * Moves every partition of a staging table into `to`, each atomically; what moved is gone from the
 * stage. `beforeMove` runs before each move (a test's failpoint between two moves).
 */
export async function movePartitions(
  engine: Engine,
  stage: string,
  to: string,
  beforeMove: () => void,
): Promise<void> {
  const parts = await engine.query(
    `SELECT DISTINCT partition_id FROM system.parts WHERE database = ${literal(STAGING_DATABASE)} AND table = ${literal(stage)} AND active ORDER BY partition_id`,
  );
  for (const row of parts.rows) {
    beforeMove();
    await engine.execute(
      `ALTER TABLE ${stageTable(stage)} MOVE PARTITION ID ${literal(String(row.partition_id))} TO TABLE ${to}`,
    );
  }
}

/** Drops every staging table of a pipe (all its slots). */
export async function dropStages(engine: Engine, pipeId: string): Promise<void> {
  const id = stageId(pipeId);
  const tables = await engine.query(
    `SELECT name FROM system.tables WHERE database = ${literal(STAGING_DATABASE)} AND (name LIKE ${literal(`stage_${id}_%`)} OR name LIKE ${literal(`stage_errors_${id}_%`)})`,
  );
  for (const row of tables.rows) {
    await engine.execute(`DROP TABLE IF EXISTS ${stageTable(String(row.name))}`);
  }
}
