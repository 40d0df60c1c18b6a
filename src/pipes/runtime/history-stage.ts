import { randomUUID } from 'node:crypto';
import type { Engine } from '../../engine/index.js';
import {
  EVENTS,
  EVENTS_TABLE,
  ensureHistory,
  HISTORY_DATABASE,
  type HistoryEvent,
  insertEventsSql,
  MINUTES_VIEW,
  type PipeLag,
} from '../history/index.js';
import {
  ensureStage,
  movePartitions,
  type StageOf,
  type Storages,
  stageNames,
  stageTable,
} from './stages.js';

/**
 * A batch's row of its pipe's history (src/pipes/history) travels with the batch: it is written
 * into a stage of the history table of the batch's slot, emptied and written again with the
 * batch's own stages, and moved with them. A batch read again after a crash writes it again into
 * an emptied stage; one staged before a crash only finishes its moves: the history holds each
 * committed batch once, and no other.
 */
export interface BatchHistory {
  /** Days of history the table keeps (SLUICE_PIPE_HISTORY_DAYS). */
  days: number;
  /** The batch's row, made once its stages hold exactly what it read. */
  event(batch: { bytes: number }, staged: StagedBatch): HistoryEvent;
}

/** What a batch's stages hold, and its oldest record's time at the source, when the source says. */
export interface StagedBatch {
  rows: number;
  badRecords: number;
  oldestAt: number | undefined;
}

/** A committed batch's row: what its stages hold, the source's lag as it was staged, the pipe's state. */
export function batchEvent(
  pipe: { pipeId: string; pipeName: string; state: string },
  lag: PipeLag | undefined,
  batch: { bytes: number },
  staged: StagedBatch,
): HistoryEvent {
  const at = new Date();
  return {
    at,
    pipeId: pipe.pipeId,
    pipeName: pipe.pipeName,
    kind: 'batch',
    batch: randomUUID(),
    rows: staged.rows,
    bytes: batch.bytes,
    badRecords: staged.badRecords,
    lag,
    state: pipe.state,
    errorCode: '',
    sourceAgeMs: staged.oldestAt === undefined ? undefined : at.getTime() - staged.oldestAt,
  };
}

/** The history stage of a slot: the data stage's name with `_history` (a table's suffix is `_<hex>`). */
export function historyStage(pipeId: string, slot: number): string {
  return stageNames(pipeId, slot, '_history').data;
}

/**
 * The history table and view where they are missing or changed (`ensure`, which the caller leaves
 * off while they are as this process left them), and the slot's stage of it (kept when it holds a
 * staged batch's row).
 */
export async function ensureHistoryStage(
  engine: Engine,
  history: Pick<BatchHistory, 'days'> & { ensure: boolean },
  pipeId: string,
  slot: number,
  batchStaged: boolean,
  storages?: Storages,
): Promise<boolean> {
  const { stage, target } = historyStageOf(pipeId, slot);
  if (!history.ensure) return ensureStage(engine, stage, target, batchStaged, storages);
  // The table looked up before it was ensured may have changed since: the stage looks again.
  await ensureHistory(engine, history.days);
  return ensureStage(engine, stage, target, batchStaged);
}

/** A slot's history stage, and the history's table it moves into. */
export function historyStageOf(pipeId: string, slot: number): StageOf {
  return { stage: historyStage(pipeId, slot), target: { database: HISTORY_DATABASE, table: EVENTS_TABLE } };
}

/** The history's table and its per-minute view: a batch's shape check sees either dropped (batch.ts). */
export { HISTORY_DATABASE };

export const HISTORY_TABLES = [
  { database: HISTORY_DATABASE, table: EVENTS_TABLE },
  { database: HISTORY_DATABASE, table: MINUTES_VIEW },
] as const;

export async function stageHistory(
  engine: Engine,
  pipeId: string,
  slot: number,
  event: HistoryEvent,
): Promise<void> {
  await engine.execute(insertEventsSql(stageTable(historyStage(pipeId, slot)), [event]));
}

export async function moveHistory(
  engine: Engine,
  pipeId: string,
  slot: number,
  beforeMove: () => void,
  partitions?: ReadonlyMap<string, readonly string[]>,
): Promise<void> {
  const stage = historyStage(pipeId, slot);
  await movePartitions(engine, stage, EVENTS, beforeMove, partitions && (partitions.get(stage) ?? []));
}
