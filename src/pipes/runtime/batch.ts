import { countRows, type Engine, isTransientEngineError, literal, tableName } from '../../engine/index.js';
import type { PendingBatch, Store } from '../../store/index.js';
import { type BadRecord, insertBadRecords } from './bad-records.js';

/** Staging tables live apart from the user's databases. */
export const STAGING_DATABASE = '_sluice_staging';

export interface Destination {
  database: string;
  table: string;
  errorTable: string;
  /** Staging tables of the same definitions; absent for a Null destination (nothing to keep). */
  stages?: { data: string; errors: string };
}

/** A file the engine could not read at all (corrupt, wrong format): set aside, not retried. */
export class BadFileError extends Error {
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(message);
  }
}

export interface BatchFile {
  key: string;
  size: number;
}

/** Reads one file into `into`; returns the records the engine had to skip. */
export type FileInserter = (into: string, file: BatchFile, index: number) => Promise<BadRecord[]>;

export function stageNames(pipeId: string) {
  const id = pipeId.replace(/-/g, '');
  return { data: `stage_${id}`, errors: `stage_errors_${id}` };
}

/**
 * Takes a batch from pending to committed (DESIGN.md, "Checkpoints and exactly-once"): recorded
 * as pending, read into emptied staging tables, marked staged, moved partition by partition into
 * the destination and its error table, committed. A crash before `staged` redoes the reading; a
 * crash after it only finishes the moves, since what moved is gone from the stage.
 */
export async function completeBatch(
  context: { engine: Engine; store: Store; pipeId: string },
  destination: Destination,
  pending: PendingBatch,
  insert: FileInserter,
  concurrency: number,
): Promise<void> {
  const { engine, store, pipeId } = context;
  let batch = pending;
  while (!batch.staged) {
    await store.repos.progress.setPending(pipeId, batch);
    const stages = destination.stages;
    if (stages) {
      await engine.execute(`TRUNCATE TABLE ${stages.data}`);
      await engine.execute(`TRUNCATE TABLE ${stages.errors}`);
    }
    const skipped = batch.skipped ?? [];
    const files = batch.files.filter((file) => !skipped.some((s) => s.key === file.key));
    try {
      const into = stages?.data ?? tableName(destination.database, destination.table);
      const bad = (await mapLimited(files, concurrency, (file, index) => insert(into, file, index))).flat();
      bad.push(...skipped.map((s) => ({ source: s.key, row: 0, error: s.error, raw: '' })));
      await insertBadRecords(
        engine,
        stages?.errors ?? tableName(destination.database, destination.errorTable),
        pipeId,
        bad,
      );
      const rows = stages ? await countRows(engine, STAGING_DATABASE, stageNames(pipeId).data) : 0;
      batch = { ...batch, staged: true, rows, badRecords: bad.length };
      await store.repos.progress.setPending(pipeId, batch);
    } catch (error) {
      if (!(error instanceof BadFileError)) throw error;
      batch = { ...batch, skipped: [...skipped, { key: error.key, error: error.message }] };
    }
  }
  if (destination.stages) {
    const names = stageNames(pipeId);
    await movePartitions(engine, names.data, tableName(destination.database, destination.table));
    await movePartitions(engine, names.errors, tableName(destination.database, destination.errorTable));
  }
  await store.repos.progress.commit(pipeId, batch, new Date());
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

/** Turns an engine failure on one file into a set-aside file, unless it may pass on a retry. */
export function asBadFile(error: unknown, key: string, redact: (text: string) => string): unknown {
  if (isTransientEngineError(error)) return error;
  return new BadFileError(key, redact(error instanceof Error ? error.message : String(error)));
}

async function mapLimited<T, R>(
  items: T[],
  limit: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T, index);
    }
  });
  await Promise.all(lanes);
  return results;
}
