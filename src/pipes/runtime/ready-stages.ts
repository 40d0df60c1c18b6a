import { mapLimited } from '../../concurrency.js';
import { type Engine, literal, STAGING_DATABASE, storageKey, tableStorages } from '../../engine/index.js';
import type { Batch } from '../../store/index.js';
import type { BatchContext } from './batch.js';
import { ensureHistoryStage, HISTORY_DATABASE, HISTORY_TABLES, historyStageOf } from './history-stage.js';
import { type Destination, ensureStages, type StageOf, type Storages, stagesOf } from './stages.js';

/**
 * The columns and definitions (indexes, projections, keys, settings) of the destinations and their
 * error tables, and of the history's table and view when the batch writes one, as one string, and
 * the storage of those tables and of `stages` (ensureStage): two queries side by side, whatever the
 * number of tables. A table dropped since (the history, by an admin) changes the shape; `whole`
 * says whether every table was there; `history` is the history tables' part alone.
 */
async function shapeOf(
  engine: Engine,
  destinations: readonly Destination[],
  history: boolean,
  stages: readonly StageOf[] = [],
): Promise<{ shape: string; whole: boolean; history: string; storages: Storages }> {
  const targets = [
    ...destinations.flatMap(({ database, table, errorTable }) => [
      { database, table },
      { database, table: errorTable },
    ]),
    ...(history ? HISTORY_TABLES : []),
  ];
  const [columns, storages] = await Promise.all([
    engine.query(
      `SELECT database, table, name, type, default_kind, default_expression FROM system.columns
        WHERE (database, table) IN (${targets.map((t) => `(${literal(t.database)}, ${literal(t.table)})`).join(', ')})
        ORDER BY database, table, position`,
    ),
    tableStorages(engine, [
      ...targets,
      ...stages.map(({ stage }) => ({ database: STAGING_DATABASE, table: stage })),
    ]),
  ]);
  // A table missing (the history's, before a service's first batch) is made by readyStages.
  const definitions = targets.map((t) => storages.get(storageKey(t.database, t.table))?.definition ?? null);
  const inHistory = (t: { database?: unknown }) => t.database === HISTORY_DATABASE;
  return {
    shape: JSON.stringify([columns.rows, definitions]),
    whole: definitions.every((definition) => definition !== null),
    history: JSON.stringify([
      columns.rows.filter(inHistory),
      definitions.filter((_, index) => targets[index] && inHistory(targets[index])),
    ]),
    storages,
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
export const STAGE_STATEMENTS = 3;

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
  if (destinations.length === 0 && !history) return false;
  // The stages are looked up with their targets (two statements per stage less).
  const stages = [
    ...destinations.flatMap((d) => stagesOf(d, batch.pipeId, batch.slot)),
    ...(history ? [historyStageOf(batch.pipeId, batch.slot)] : []),
  ];
  const checked = await shapeOf(engine, destinations, history !== undefined, stages);
  if (stagesChecked?.get(batch.slot) === checked.shape) return false;
  const historyKey = (shape: { history: string }) => `${history?.days}\n${shape.history}`;
  const ensureHistory =
    history !== undefined && !(checked.whole && historyEnsured.get(engine) === historyKey(checked));
  const { storages } = checked;
  // Each stage is a table of its own: they are made side by side (the engine runs up to four
  // statements at once, README "How a pipe runs"), not one after another before the first read.
  // Every one is settled before this returns (mapLimited): no stage is still being made once a
  // failure ends the run.
  const made = await mapLimited(
    [
      ...destinations.map(
        (d) => () => ensureStages(engine, d, batch.pipeId, batch.slot, batch.staged, storages),
      ),
      ...(history
        ? [
            () =>
              ensureHistoryStage(
                engine,
                { ...history, ensure: ensureHistory },
                batch.pipeId,
                batch.slot,
                batch.staged,
                storages,
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
    checked.whole && !ensureHistory ? checked : await shapeOf(engine, destinations, history !== undefined);
  stagesChecked?.set(batch.slot, now.shape);
  if (ensureHistory) historyEnsured.set(engine, historyKey(now));
  // Made anew, the stages are empty: the batch's first read needs no TRUNCATE (completeBatch).
  if (!kept) freshStages?.add(batch.slot);
  return kept;
}

/**
 * Forgets every mark of a run's stages (checked, known empty, checked ahead of a claim): the next
 * batch of each slot checks and makes them anew (their tables were dropped: idle-stages.ts).
 */
export function forgetStages(
  context: Pick<BatchContext, 'stagesChecked' | 'freshStages' | 'stagesCheckedAt'>,
): void {
  context.stagesChecked?.clear();
  context.freshStages?.clear();
  context.stagesCheckedAt?.clear();
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
export function checkedJustNow(
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
