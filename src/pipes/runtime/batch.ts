import type { Logger } from 'pino';
import { allDone, mapLimited } from '../../concurrency.js';
import { countRows, type Engine, storageKey, tableName, tablesInsertedInto } from '../../engine/index.js';
import type { Failpoint } from '../../failpoints.js';
import type { Batch, Store } from '../../store/index.js';
import {
  type BadRecord,
  insertBadRecords,
  PermanentError,
  type ProducingReader,
  type RangeRead,
  ReadAgainError,
  UnreadablePartError,
} from '../records/index.js';
import type { BatchSink } from '../sources/index.js';
import { type BatchHistory, historyStage, moveHistory, stageHistory } from './history-stage.js';
import { checkedJustNow, readyStages, STAGE_STATEMENTS } from './ready-stages.js';
import { batchSink, type StageCounts } from './source-ports.js';
import { emptyTables, type StageEmptying } from './stage-emptying.js';
import {
  type Destination,
  movePartitions,
  passOn,
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
   * The slots whose stages are empty as far as this run knows: made anew by readyStages, or emptied
   * after the moves of the slot's last batch, and no batch has read into them since. The next
   * batch of the slot reads into them without emptying them first.
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
  /** Empties a batch's stages after its commit, in the background (stage-emptying.ts). */
  emptying: StageEmptying;
  /** Where a batch inserted again after a stop says so (passOnAgain). */
  logger: Logger;
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
  // The slot's last batch may still be emptying the stages: settled before they are touched.
  const emptiedBefore = await context.emptying.settled(batch.slot);
  const stages = (d: Destination) => stageNames(batch.pipeId, batch.slot, d.stageSuffix);
  const kept = checkedJustNow(context, destinations, batch.slot)
    ? false
    : await readyStages(context, destinations, batch);
  const targets = targetsOf(destinations, stages);
  // Stages made anew for this batch (or just before its claim), or emptied after the moves of the
  // slot's last batch, are empty; a read of this batch that set a part aside, or a failed batch of
  // the slot, may have left rows: emptied first.
  let empty = freshStages?.delete(batch.slot) === true || emptiedBefore === true;
  const stageTables = destinations.flatMap((d) => [stages(d).data, stages(d).errors]);
  const slotStages = [...stageTables, ...(history ? [historyStage(batch.pipeId, batch.slot)] : [])];
  const listPartitions = () => stagePartitions(engine, slotStages);
  let partitions: Map<string, string[]> | undefined;
  // Asked as the batch is staged (so a view made while the pipe runs sees its next batch).
  const listInsertedInto = () => tablesInsertedInto(engine, destinations);
  let insertedInto: Set<string> | undefined;
  while (!batch.staged) {
    if (!empty) await emptyTables(engine, slotStages);
    empty = false;
    try {
      const counted = await readInto(context, targets, batch, read);
      const landed = await stagedCounts(engine, destinations, stages, counted.stageCounts);
      checkCounts(batch, counted, landed, stageTables);
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
      // The stages hold the whole batch now: their partitions are listed while it is marked staged.
      [, partitions, insertedInto] = await allDone([
        store.repos.progress.setStaged(batch),
        listPartitions(),
        listInsertedInto(),
      ]);
    } catch (error) {
      // The source reads a part its engine refused another way: into emptied stages again.
      if (error instanceof ReadAgainError) continue;
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
  // A batch staged before this run (a crash after `staged`) lists what is left of its stages.
  partitions ??= await listPartitions();
  insertedInto ??= await listInsertedInto();
  const partitionsOf = (stage: string) => partitions?.get(stage) ?? [];
  const inserts = destinations.filter(
    (d) => insertedInto?.has(storageKey(d.database, d.table)) && partitionsOf(stages(d).data).length > 0,
  );
  if (inserts.length > 0) await beforeInserts(context, batch, inserts);
  for (const destination of destinations) {
    const { data, errors } = stages(destination);
    const { database } = destination;
    const to = tableName(database, destination.table);
    // A Null table, or one with materialized views, which see only what is inserted (passOn).
    if (insertedInto.has(storageKey(database, destination.table))) {
      const inserted = () => failpoint('inserted', batch);
      await passOn(engine, data, to, { beforeMove, inserted }, partitionsOf(data));
      // Emptied by passOn: nothing is left for the emptying after the commit.
      partitions.delete(data);
    } else await movePartitions(engine, data, to, beforeMove, partitionsOf(data));
    const errorsTo = tableName(database, destination.errorTable);
    await movePartitions(engine, errors, errorsTo, beforeMove, partitionsOf(errors));
  }
  if (history) await moveHistory(engine, batch.pipeId, batch.slot, beforeMove, partitions);
  failpoint('moved', batch);
  await store.transaction((repos) => repos.progress.commit(batch, new Date()));
  // A stage kept for this batch's moves is made anew, as the destination is now, for the next.
  if (kept) stagesChecked?.delete(batch.slot);
  else {
    // Each move left an empty part in its stage (stage-emptying.ts): the stages moved out of are
    // emptied, which a crash before it leaves to the slot's next batch (not known empty then).
    // Nothing else writes into a stage after its batch was staged, so the next batch reads into
    // them as they are; a row there all the same fails that batch's count check.
    const moved = [...partitions.entries()].filter(([, list]) => list.length > 0).map(([stage]) => stage);
    context.emptying.start(batch.slot, batch.pipeId, moved);
  }
  return batch;
}

type Stages = (d: Destination) => { data: string; errors: string };

/**
 * Before a batch's first insert into a destination with views (or Null), the store records that it
 * began (Batch.inserting). A run that finds it so cannot tell what the engine wrote before the stop
 * (its own parts, each view's blocks): the batch is inserted again, at least once, and the log
 * names the batch and the tables that may hold its rows twice (README, "How a pipe runs").
 */
async function beforeInserts(
  { store, logger }: BatchContext,
  batch: Batch,
  inserts: readonly Destination[],
): Promise<void> {
  if (!batch.inserting) {
    batch.inserting = true;
    await store.repos.progress.setInserting(batch);
    return;
  }
  const tables = inserts.map((d) => `${d.database}.${d.table}`);
  logger.warn(
    { pipeId: batch.pipeId, batch: batch.seq, rows: batch.rows, tables },
    `batch ${batch.seq} was being inserted into ${tables.join(', ')} when the pipe stopped: it is inserted again, so its ${batch.rows} rows may be there, and in those tables' materialized views, twice`,
  );
}

/** Where a batch's rows and bad records go: each destination's stages. */
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
    into: (d: Destination) => stageTable(stages(d).data),
    errorsInto: (d: Destination) => stageTable(stages(d).errors),
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
): Promise<{ rows: number; badRecords: number; oldestAt: number | undefined; stageCounts: StageCounts }> {
  const { destinationOf, into } = targets;
  const stageCounts: StageCounts = new Map();
  const sink = batchSink(
    { engine, sourceReader },
    { into: (table) => into(destinationOf(table)) },
    stageCounts,
  );
  const result = await read(batch, sink);
  const skipped: BadRecord[] = batch.skipped.map((s) => ({ source: s.key, row: 0, error: s.error, raw: '' }));
  const bad = [...result.badRecords, ...skipped];
  for (const destination of targets.destinations) {
    const mine = bad.filter((record) => destinationOf(record.table) === destination);
    await insertBadRecords(engine, targets.errorsInto(destination), batch.pipeId, mine);
  }
  return { rows: result.rows, badRecords: bad.length, oldestAt: result.oldestAt, stageCounts };
}

/**
 * What the stages hold, counted by the engine (the counts side by side); a data stage the read
 * counted after its last load (a stream's text the engine loaded itself) is not counted again.
 */
async function stagedCounts(
  engine: Engine,
  destinations: readonly Destination[],
  stages: Stages,
  counted: StageCounts,
) {
  const count = async (table: string) =>
    counted.get(stageTable(table)) ?? (await countRows(engine, STAGING_DATABASE, table));
  const counts = await mapLimited(destinations, STAGE_STATEMENTS, (d) =>
    allDone([count(stages(d).data), count(stages(d).errors)]),
  );
  return {
    rows: counts.reduce((sum, [rows]) => sum + rows, 0),
    badRecords: counts.reduce((sum, [, bad]) => sum + bad, 0),
  };
}

/**
 * The stages must hold exactly what the batch read: a block the engine dropped (or doubled) on
 * the way fails the batch, loudly, before anything of it reaches the destination. The stages are
 * the pipe's own, but a service's admin can write into them: the message names them, so such a
 * write is not taken for a defect.
 */
function checkCounts(
  batch: Batch,
  read: { rows: number; badRecords: number },
  landed: { rows: number; badRecords: number },
  tables: readonly string[],
): void {
  if (read.rows === landed.rows && read.badRecords === landed.badRecords) return;
  throw new StagedCountError(
    `batch ${batch.seq} read ${read.rows} rows and ${read.badRecords} bad records, but the engine staged ${landed.rows} rows and ${landed.badRecords} bad records in the pipe's staging tables (${tables.map(stageTable).join(', ')}): nothing of it was moved into the destination. Either something else wrote into or deleted from those tables (they are Sluice's alone: no query of the service should touch them), or Sluice or the engine lost or doubled rows on the way, a defect to report. Start the pipe to read the batch again`,
  );
}
