import { allDone, mapLimited } from '../../concurrency.js';
import { countRows, type Engine, literal, tableName } from '../../engine/index.js';
import type { Failpoint } from '../../failpoints.js';
import type { Batch, Store } from '../../store/index.js';
import {
  type BadRecord,
  insertBadRecords,
  PermanentError,
  type ProducingReader,
  type RangeRead,
  UnreadablePartError,
} from '../records/index.js';
import type { BatchSink } from '../sources/index.js';
import {
  type BatchHistory,
  emptyHistoryStage,
  ensureHistoryStage,
  HISTORY_DATABASE,
  HISTORY_TABLES,
  historyStage,
  moveHistory,
  stageHistory,
} from './history-stage.js';
import { batchSink } from './source-ports.js';
import {
  type Destination,
  ensureStages,
  movePartitions,
  STAGING_DATABASE,
  stageNames,
  stagePartitions,
  stageTable,
} from './stages.js';

/**
 * Reads exactly a batch's range (without its skipped parts) into the sink (sources/ports.ts);
 * returns the rows it loaded and its bad records.
 */
export type RangeReader = (batch: Batch, sink: BatchSink) => Promise<RangeRead>;

/**
 * The stages hold other than what the batch read: the engine dropped or added rows on the way
 * (README, "How a pipe runs"). The batch is not moved; the pipe fails saying so, and reads the
 * batch again when it is started.
 */
export class StagedCountError extends PermanentError {
  constructor(message: string) {
    super('SLUICE_ERR_STAGED_COUNT', message);
  }
}

/**
 * The columns and definitions (indexes, projections, keys, settings) of the destinations and their
 * error tables, and of the history's table and view when the batch writes one, as one string: two queries,
 * whatever the number of tables. A table dropped since (the history, by an admin) changes it;
 * `whole` says whether every table was there; `history` is the history tables' part alone.
 */
async function shapeOf(
  engine: Engine,
  destinations: readonly Destination[],
  history: boolean,
): Promise<{ shape: string; whole: boolean; history: string }> {
  const tables = [
    ...destinations.flatMap((d) => [
      `(${literal(d.database)}, ${literal(d.table)})`,
      `(${literal(d.database)}, ${literal(d.errorTable)})`,
    ]),
    ...(history ? HISTORY_TABLES.map((t) => `(${literal(t.database)}, ${literal(t.table)})`) : []),
  ];
  const [columns, definitions] = await Promise.all([
    engine.query(
      `SELECT database, table, name, type, default_kind, default_expression FROM system.columns
        WHERE (database, table) IN (${tables.join(', ')})
        ORDER BY database, table, position`,
    ),
    engine.query(
      `SELECT database, name, create_table_query FROM system.tables
        WHERE (database, name) IN (${tables.join(', ')}) ORDER BY database, name`,
    ),
  ]);
  const ofHistory = (rows: Record<string, unknown>[]) =>
    rows.filter((row) => row.database === HISTORY_DATABASE);
  // A table missing (the history's, before a service's first batch) is made by readyStages.
  return {
    shape: JSON.stringify([columns.rows, definitions.rows]),
    whole: definitions.rows.length === tables.length,
    history: JSON.stringify([ofHistory(columns.rows), ofHistory(definitions.rows)]),
  };
}

/**
 * Per engine, the history tables' shape (shapeOf) as this process last ensured them: while every
 * table is there as it was left, a pipe's stages need not ensure them again (four statements
 * before a one-off pipe's first read). A table dropped or changed since (by an admin) is ensured.
 */
const historyEnsured = new WeakMap<Engine, string>();

/**
 * Statements a batch's stage work runs at once: the engine runs up to four of Sluice's own (README,
 * "How a pipe runs"), and a pipe's other slots and the loads share them.
 */
const STAGE_STATEMENTS = 3;

export interface BatchContext {
  engine: Engine;
  /** The service's source reader, which parses what a source reads (sources/ports.ts). */
  sourceReader: ProducingReader;
  store: Store;
  /**
   * Per slot, the destinations' shape (their columns) when its stages were last checked in this
   * run: a stream's small batches check the stages again only after a destination changed.
   */
  stagesChecked?: Map<number, string>;
  /**
   * The slots whose stages readyStages made anew, empty, in this run and no batch has read into
   * since: the next batch of the slot reads into them without emptying them first.
   */
  freshStages?: Set<number>;
  /**
   * Per slot, when its stages were checked ahead of its first claim (the run's early check of slot
   * 0, runner.ts): a batch starting within STAGES_CHECK_FRESH_MS of it is not checked again.
   */
  stagesCheckedAt?: Map<number, { at: number; destinations: readonly Destination[] }>;
  /** A test's failpoint (src/failpoints.ts): told of each step the batch passes. */
  failpoint?: Failpoint;
  /** The batch's row of its pipe's history, staged and moved with it (history-stage.ts). */
  history?: BatchHistory;
}

/**
 * Makes the slot's stages (and its history stage) for a batch unless they were checked against the
 * destinations' present shape in this run (stagesChecked); true when a stage holding the batch,
 * staged, was kept for its moves (ensureStages).
 */
export async function readyStages(
  {
    engine,
    stagesChecked,
    freshStages,
    history,
  }: Pick<BatchContext, 'engine' | 'stagesChecked' | 'freshStages' | 'history'>,
  destinations: readonly Destination[],
  batch: Pick<Batch, 'pipeId' | 'slot' | 'staged'>,
): Promise<boolean> {
  const staged = destinations.filter((d) => d.staged);
  if (staged.length === 0 && !history) return false;
  const checked = await shapeOf(engine, staged, history !== undefined);
  if (stagesChecked?.get(batch.slot) === checked.shape) return false;
  const historyKey = (shape: { history: string }) => `${history?.days}\n${shape.history}`;
  const ensureHistory =
    history !== undefined && !(checked.whole && historyEnsured.get(engine) === historyKey(checked));
  // Each stage is a table of its own: they are made side by side (the engine runs up to four
  // statements at once, README "How a pipe runs"), not one after another before the first read.
  // Every one is settled before this returns (mapLimited): no stage is still being made once a
  // failure ends the run.
  const made = await mapLimited(
    [
      ...staged.map((d) => () => ensureStages(engine, d, batch.pipeId, batch.slot, batch.staged)),
      ...(history
        ? [
            () =>
              ensureHistoryStage(
                engine,
                { ...history, ensure: ensureHistory },
                batch.pipeId,
                batch.slot,
                batch.staged,
              ),
          ]
        : []),
    ],
    STAGE_STATEMENTS,
    (make) => make(),
  );
  const kept = made.some(Boolean);
  // Tables made or changed just now are recorded as they are now, or the next batch would make
  // its stages (or the history) again.
  const now =
    checked.whole && !ensureHistory ? checked : await shapeOf(engine, staged, history !== undefined);
  stagesChecked?.set(batch.slot, now.shape);
  if (ensureHistory) historyEnsured.set(engine, historyKey(now));
  // Made anew, the stages are empty: the batch's first read needs no TRUNCATE (completeBatch).
  if (!kept) freshStages?.add(batch.slot);
  return kept;
}

/**
 * Takes a claimed batch to committed (README, "How a pipe runs"): read into its slot's emptied
 * staging tables, its stages' counts held against what the source read, marked staged, moved
 * partition by partition into the destination and its error table, committed. A crash before
 * `staged` reads the batch again; a crash after it only finishes the moves, since what moved is
 * gone from the stage. Returns the batch as committed (its rows and bad records counted by the
 * engine, in the stages).
 */
export async function completeBatch(
  context: BatchContext,
  destinations: readonly Destination[],
  claimed: Batch,
  read: RangeReader,
): Promise<Batch> {
  const { engine, store, stagesChecked, freshStages, history } = context;
  const failpoint = context.failpoint ?? (() => {});
  const batch = { ...claimed };
  const staged = destinations.filter((d) => d.staged);
  const stages = (d: Destination) => stageNames(batch.pipeId, batch.slot, d.stageSuffix);
  const kept = checkedJustNow(context, destinations, batch.slot)
    ? false
    : await readyStages(context, destinations, batch);
  const targets = targetsOf(destinations, stages);
  // Stages made anew for this batch (or just before its claim) are empty; stages a batch of this
  // run read into before, or a read of this batch that set a part aside, are emptied first.
  let empty = freshStages?.delete(batch.slot) === true;
  while (!batch.staged) {
    if (!empty) await emptyStages(engine, staged, stages, history ? batch : undefined);
    empty = false;
    try {
      const counted = await readInto(context, targets, batch, read);
      const landed = await stagedCounts(engine, staged, stages);
      if (staged.length === destinations.length) checkCounts(batch, counted, landed);
      if (history) {
        const event = history.event(batch, {
          rows: landed.rows,
          badRecords: counted.badRecords,
          oldestAt: counted.oldestAt,
        });
        await stageHistory(engine, batch.pipeId, batch.slot, event);
      }
      batch.rows = landed.rows;
      batch.badRecords = counted.badRecords;
      batch.staged = true;
      await store.repos.progress.setStaged(batch);
    } catch (error) {
      if (!(error instanceof UnreadablePartError)) throw error;
      batch.skipped = [...batch.skipped, { key: error.key, error: error.message }];
      await store.repos.progress.setSkipped(batch);
    }
  }
  failpoint('staged', batch);
  let moves = 0;
  const beforeMove = () => {
    if (moves++ > 0) failpoint('between-moves', batch);
  };
  const partitions = await stagePartitions(engine, [
    ...staged.flatMap((d) => [stages(d).data, stages(d).errors]),
    ...(history ? [historyStage(batch.pipeId, batch.slot)] : []),
  ]);
  const partitionsOf = (stage: string) => partitions.get(stage) ?? [];
  for (const destination of staged) {
    const { data, errors } = stages(destination);
    const { database } = destination;
    await movePartitions(
      engine,
      data,
      tableName(database, destination.table),
      beforeMove,
      partitionsOf(data),
    );
    const errorsTo = tableName(database, destination.errorTable);
    await movePartitions(engine, errors, errorsTo, beforeMove, partitionsOf(errors));
  }
  if (history) await moveHistory(engine, batch.pipeId, batch.slot, beforeMove, partitions);
  failpoint('moved', batch);
  await store.transaction((repos) => repos.progress.commit(batch, new Date()));
  // A stage kept for this batch's moves is made anew, as the destination is now, for the next.
  if (kept) stagesChecked?.delete(batch.slot);
  return batch;
}

/**
 * How long a check of a slot's stages made ahead of its first claim stands for that batch. A
 * destination changed after any check meets the batch at its moves (stages.ts, ensureStage: the
 * staged rows are staged again as the destination is now, or the pipe fails saying its columns
 * changed); standing a second widens that window by at most a second and spares the first batch
 * two statements.
 */
const STAGES_CHECK_FRESH_MS = 1000;

/**
 * Whether the slot's stages were checked, for these very destinations (a database pipe may change
 * them between claims), ahead of this batch a moment ago; the mark is used once.
 */
function checkedJustNow(
  { stagesCheckedAt }: Pick<BatchContext, 'stagesCheckedAt'>,
  destinations: readonly Destination[],
  slot: number,
): boolean {
  const checked = stagesCheckedAt?.get(slot);
  stagesCheckedAt?.delete(slot);
  return (
    checked !== undefined &&
    checked.destinations === destinations &&
    performance.now() - checked.at < STAGES_CHECK_FRESH_MS
  );
}

type Stages = (d: Destination) => { data: string; errors: string };

/** Where a batch's rows and bad records go: each destination's stages, or a Null destination itself. */
function targetsOf(destinations: readonly Destination[], stages: Stages) {
  const main = destinations[0] as Destination;
  const byTable = new Map(destinations.map((d) => [d.table, d]));
  const destinationOf = (table: string | undefined) => {
    const found = table === undefined ? main : byTable.get(table);
    if (!found)
      throw new PermanentError(
        'SLUICE_ERR_UNSUPPORTED',
        `the source wrote to ${table}, which is not one of the pipe's tables`,
      );
    return found;
  };
  return {
    destinations,
    main,
    destinationOf,
    into: (d: Destination) => (d.staged ? stageTable(stages(d).data) : tableName(d.database, d.table)),
    errorsInto: (d: Destination) =>
      d.staged ? stageTable(stages(d).errors) : tableName(d.database, d.errorTable),
  };
}

/**
 * Reads the range into its targets and writes its bad records (its skipped parts too) beside each
 * table; returns the rows the source loaded and the bad records written.
 */
async function readInto(
  { engine, sourceReader }: BatchContext,
  targets: ReturnType<typeof targetsOf>,
  batch: Batch,
  read: RangeReader,
): Promise<{ rows: number; badRecords: number; oldestAt: number | undefined }> {
  const { destinationOf, into } = targets;
  const sink = batchSink(
    { engine, sourceReader },
    { into: (table) => into(destinationOf(table)), staged: (table) => destinationOf(table).staged },
  );
  const result = await read(batch, sink);
  const skipped: BadRecord[] = batch.skipped.map((s) => ({ source: s.key, row: 0, error: s.error, raw: '' }));
  const bad = [...result.badRecords, ...skipped];
  for (const destination of targets.destinations) {
    const mine = bad.filter((record) => destinationOf(record.table) === destination);
    await insertBadRecords(engine, targets.errorsInto(destination), batch.pipeId, mine);
  }
  return { rows: result.rows, badRecords: bad.length, oldestAt: result.oldestAt };
}

/** Empties a slot's stages (its history stage too, given the batch), side by side. */
async function emptyStages(
  engine: Engine,
  staged: readonly Destination[],
  stages: Stages,
  history: Pick<Batch, 'pipeId' | 'slot'> | undefined,
): Promise<void> {
  const tables = staged.flatMap((d) => [stages(d).data, stages(d).errors]);
  await mapLimited(
    [
      ...tables.map((t) => () => engine.execute(`TRUNCATE TABLE ${stageTable(t)}`)),
      ...(history ? [() => emptyHistoryStage(engine, history.pipeId, history.slot)] : []),
    ],
    STAGE_STATEMENTS,
    (empty) => empty(),
  );
}

/** What the stages hold, counted by the engine (the counts side by side). */
async function stagedCounts(engine: Engine, staged: readonly Destination[], stages: Stages) {
  const count = (table: string) => countRows(engine, STAGING_DATABASE, table);
  const counts = await mapLimited(staged, STAGE_STATEMENTS, (d) =>
    allDone([count(stages(d).data), count(stages(d).errors)]),
  );
  return {
    rows: counts.reduce((sum, [rows]) => sum + rows, 0),
    badRecords: counts.reduce((sum, [, bad]) => sum + bad, 0),
  };
}

/**
 * The stages must hold exactly what the batch read: a block the engine dropped (or doubled) on
 * the way fails the batch, loudly, before anything of it reaches the destination.
 */
function checkCounts(
  batch: Batch,
  read: { rows: number; badRecords: number },
  landed: { rows: number; badRecords: number },
): void {
  if (read.rows === landed.rows && read.badRecords === landed.badRecords) return;
  throw new StagedCountError(
    `batch ${batch.seq} read ${read.rows} rows and ${read.badRecords} bad records, but the engine staged ${landed.rows} rows and ${landed.badRecords} bad records: nothing of it was moved into the destination. This is a defect of Sluice or of the engine; start the pipe to read the batch again, and report it`,
  );
}
