import { createHash } from 'node:crypto';
import { allDone } from '../../concurrency.js';
import {
  countRows,
  describeTable,
  type Engine,
  EngineError,
  isOldStage,
  literal,
  moveCheckSql,
  resetOldDeduplicationSql,
  STAGING_DATABASE,
  stageTableSql,
  storageKey,
  type TableStorage,
  tableName,
  tableStorage,
} from '../../engine/index.js';
import { PermanentError } from '../records/index.js';

export { STAGING_DATABASE };

/** A table a pipe writes, beside its error table (runtime/destination.ts makes them). */
export interface Destination {
  database: string;
  table: string;
  errorTable: string;
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
 * stage holding a staged batch is kept, for that batch's moves (the answer, true, says so; it is
 * made anew for the next batch): an old one loses its deduplication window, and one that could no
 * longer move into its destination has its rows copied into one that can. A new stage that could
 * not move into its destination fails the pipe before anything is staged.
 */
export async function ensureStages(
  engine: Engine,
  destination: Destination,
  pipeId: string,
  slot: number,
  batchStaged: boolean,
  storages?: Storages,
): Promise<boolean> {
  // Two tables of their own, made side by side; both settle before an answer or a failure.
  const kept = await allDone(
    stagesOf(destination, pipeId, slot).map(({ stage, target }) =>
      ensureStage(engine, stage, target, batchStaged, storages),
    ),
  );
  return kept.some(Boolean);
}

/** A slot's two stages for a destination (its rows, its bad records), each with the table it moves into. */
export function stagesOf(destination: Destination, pipeId: string, slot: number): StageOf[] {
  const names = stageNames(pipeId, slot, destination.stageSuffix);
  const { database } = destination;
  return [
    { stage: names.data, target: { database, table: destination.table } },
    { stage: names.errors, target: { database, table: destination.errorTable } },
  ];
}

/** A stage, and the table its partitions move into. */
export interface StageOf {
  stage: string;
  target: { database: string; table: string };
}

/**
 * The storage of stages and their targets, looked up together (tableStorages, in ready-stages.ts):
 * a table asked and missing from it does not exist.
 */
export type Storages = ReadonlyMap<string, TableStorage>;

/**
 * Makes one stage for `target` anew, or keeps it (true) when it holds a staged batch
 * (ensureStages); the pipe's history stage too (runtime/history-stage.ts).
 */
export async function ensureStage(
  engine: Engine,
  stage: string,
  target: { database: string; table: string },
  batchStaged: boolean,
  storages?: Storages,
): Promise<boolean> {
  const { database } = target;
  const [stageStorage, targetStorage] = storages
    ? [storages.get(storageKey(STAGING_DATABASE, stage)), storages.get(storageKey(database, target.table))]
    : await Promise.all([
        tableStorage(engine, STAGING_DATABASE, stage),
        tableStorage(engine, database, target.table),
      ]);
  const into = tableName(database, target.table);
  // A Null destination's stage is a plain MergeTree of its columns; its batch is passed on (passOn).
  const moves = targetStorage?.engine !== 'Null';
  if (moves && !targetStorage?.engine.endsWith('MergeTree')) {
    throw new PermanentError(
      'SLUICE_ERR_DESTINATION_MISMATCH',
      `${database}.${target.table} is a ${targetStorage?.engine ?? 'missing'} table: a pipe writes into a table of the MergeTree family (or Null)`,
    );
  }
  if (stageStorage && batchStaged && (await countRows(engine, STAGING_DATABASE, stage)) > 0) {
    const [stageColumns, targetColumns] = await Promise.all([
      describeTable(engine, STAGING_DATABASE, stage),
      describeTable(engine, database, target.table),
    ]);
    if (JSON.stringify(stageColumns) !== JSON.stringify(targetColumns)) {
      throw new PermanentError(
        'SLUICE_ERR_DESTINATION_MISMATCH',
        `${database}.${target.table} changed shape while a batch was staged for it: put the columns back, or delete and create the pipe again`,
      );
    }
    if (isOldStage(stageStorage)) {
      await engine.execute(resetOldDeduplicationSql(STAGING_DATABASE, stage));
    }
    // The destination changed after the batch was staged (an index, a projection): its rows go
    // into a stage made as the destination is now, counted, before they move.
    if (moves && (await moveProblem(engine, stageTable(stage), into)) !== undefined) {
      await restage(engine, stage, into, targetStorage);
    }
    return true;
  }
  if (stageStorage) await engine.execute(`DROP TABLE ${stageTable(stage)}`);
  await engine.execute(stageTableSql(stageTable(stage), into, targetStorage));
  if (moves) await checkMove(engine, stageTable(stage), into, `${database}.${target.table}`);
  return false;
}

/** The engine's codes for two tables whose parts cannot move from one to the other. */
const CANNOT_MOVE = new Set([
  36, // BAD_ARGUMENTS: "Tables have different ordering / primary key / indices / projections ..."
  122, // INCOMPATIBLE_COLUMNS
]);

/**
 * Fails the pipe, before anything is staged, when a stage's partitions could not move into its
 * destination; any other failure (the engine restarting, a limit) may pass and is thrown as it is.
 */
async function checkMove(engine: Engine, stage: string, into: string, name: string): Promise<void> {
  const problem = await moveProblem(engine, stage, into);
  if (problem === undefined) return;
  throw new PermanentError(
    'SLUICE_ERR_UNSUPPORTED',
    `a batch staged for ${name} could not be moved into it (${problem}); its definition is one Sluice cannot stage for yet`,
  );
}

/**
 * Why a stage's partitions cannot move into `into`, as a move of a partition that does not exist
 * says; undefined when they can.
 */
async function moveProblem(engine: Engine, stage: string, into: string): Promise<string | undefined> {
  try {
    await engine.execute(moveCheckSql(stage, into));
    return undefined;
  } catch (error) {
    if (!(error instanceof EngineError) || !CANNOT_MOVE.has(error.code ?? 0)) throw error;
    return error.message;
  }
}

/**
 * Copies a staged batch's rows into a stage made as the destination is now and puts it in the old
 * one's place (EXCHANGE TABLES, atomic); a copy that does not hold every row fails the pipe.
 * Done again from the start after a crash: the old stage keeps the rows until the exchange.
 */
async function restage(engine: Engine, stage: string, into: string, storage: TableStorage): Promise<void> {
  const fresh = `${stage}_fresh`;
  await engine.execute(`DROP TABLE IF EXISTS ${stageTable(fresh)}`);
  await engine.execute(stageTableSql(stageTable(fresh), into, storage));
  await engine.execute(`INSERT INTO ${stageTable(fresh)} SELECT * FROM ${stageTable(stage)}`);
  const [copied, staged] = await Promise.all([
    countRows(engine, STAGING_DATABASE, fresh),
    countRows(engine, STAGING_DATABASE, stage),
  ]);
  if (copied !== staged) {
    throw new PermanentError(
      'SLUICE_ERR_STAGED_COUNT',
      `the staged rows for ${into} could not be copied into a stage that moves into it (${copied} of ${staged})`,
    );
  }
  await engine.execute(`EXCHANGE TABLES ${stageTable(stage)} AND ${stageTable(fresh)}`);
  await engine.execute(`DROP TABLE ${stageTable(fresh)}`);
}

/**
 * The active partitions of staging tables, each table's in order, in one statement: a staged
 * batch's stages no longer change, so its moves need not ask again per stage.
 */
export async function stagePartitions(
  engine: Engine,
  stages: readonly string[],
): Promise<Map<string, string[]>> {
  const parts = await engine.query(
    `SELECT table, arraySort(groupUniqArray(partition_id)) AS partitions FROM system.parts
      WHERE database = ${literal(STAGING_DATABASE)} AND table IN (${stages.map(literal).join(', ')}) AND active
      GROUP BY table`,
  );
  return new Map(parts.rows.map((row) => [String(row.table), (row.partitions as unknown[]).map(String)]));
}

/**
 * Moves every partition of a staging table into `to`, each atomically; what moved is gone from the
 * stage. `beforeMove` runs before each move (a test's failpoint between two moves). `partitions`,
 * when given, are the stage's as stagePartitions listed them.
 */
export async function movePartitions(
  engine: Engine,
  stage: string,
  to: string,
  beforeMove: () => void,
  partitions?: readonly string[],
): Promise<void> {
  for (const partition of partitions ?? (await stagePartitions(engine, [stage])).get(stage) ?? []) {
    beforeMove();
    await engine.execute(
      `ALTER TABLE ${stageTable(stage)} MOVE PARTITION ID ${literal(partition)} TO TABLE ${to}`,
    );
  }
}

/**
 * Passes a staged batch on by insert, to a destination a move would not serve (tablesInsertedInto:
 * a Null table, a table with materialized views): one INSERT ... SELECT of the stage, then the
 * stage is emptied. A crash before the insert passes the batch on when the batch's moves are
 * finished; one during the insert, or between it and the TRUNCATE, passes it on again, since the
 * engine keeps no trace of what the insert wrote (docs/exactly-once.md). `beforeMove` runs first,
 * as before a move, and `inserted` between the insert and the TRUNCATE (a test's failpoint).
 */
export async function passOn(
  engine: Engine,
  stage: string,
  to: string,
  steps: { beforeMove: () => void; inserted: () => void },
  partitions: readonly string[],
): Promise<void> {
  if (partitions.length === 0) return;
  steps.beforeMove();
  // The stage is made AS the destination: `*` is the columns an insert into it takes, in order
  // (its materialized, alias and ephemeral ones it makes again itself).
  // The stage's parts were loaded a block at a time: one insert of them all may span more
  // partitions than the engine lets a block have by default.
  await engine.execute(`INSERT INTO ${to} SELECT * FROM ${stageTable(stage)}`, {
    settings: { max_partitions_per_insert_block: 0 },
  });
  steps.inserted();
  await engine.execute(`TRUNCATE TABLE ${stageTable(stage)}`);
}

/** The staging tables of a pipe (all its slots), as a condition on system.tables or system.parts. */
function stagesOfPipe(pipeId: string, column: string): string {
  const id = stageId(pipeId);
  return `(${column} LIKE ${literal(`stage_${id}_%`)} OR ${column} LIKE ${literal(`stage_errors_${id}_%`)})`;
}

/**
 * Drops every staging table of a pipe (all its slots), at once (SYNC): a table dropped otherwise
 * keeps its memory in the engine for the database's delay (8 minutes), which 3,000 idle pipes'
 * stages made about 150 MB (idle-stages.ts).
 */
export async function dropStages(engine: Engine, pipeId: string): Promise<void> {
  const tables = await engine.query(
    `SELECT name FROM system.tables WHERE database = ${literal(STAGING_DATABASE)} AND ${stagesOfPipe(pipeId, 'name')}`,
  );
  for (const row of tables.rows) {
    await engine.execute(`DROP TABLE IF EXISTS ${stageTable(String(row.name))} SYNC`);
  }
}
