import type { Queryable } from './db.js';

/**
 * A batch of files recorded before it is inserted (DESIGN.md, "Checkpoints and exactly-once"):
 * `staged` turns true once the whole batch sits in the pipe's staging table, so recovery knows
 * whether to insert the batch again or only to move what is staged.
 */
export interface PendingBatch {
  files: { key: string; size: number }[];
  staged: boolean;
  /** Files the engine could not read at all: set aside (into the error table), not retried. */
  skipped?: { key: string; error: string }[];
  rows?: number;
  badRecords?: number;
}

export interface PipeProgress {
  pipeId: string;
  lastKey: string | null;
  pending: PendingBatch | null;
  filesDone: number;
  /** Files found after the cursor at the last listing (capped by the listing's page of work). */
  filesPending: number;
  rowsWritten: number;
  bytesWritten: number;
  badRecords: number;
  lastInsertAt: Date | null;
  lastError: string | null;
  lastErrorAt: Date | null;
}

const PROGRESS = `pipe_id as "pipeId", last_key as "lastKey", pending, files_done::float8 as "filesDone", files_pending::float8 as "filesPending",
  rows_written::float8 as "rowsWritten", bytes_written::float8 as "bytesWritten", bad_records::float8 as "badRecords",
  last_insert_at as "lastInsertAt", last_error as "lastError", last_error_at as "lastErrorAt"`;

/** Where each pipe is: its committed cursor, its pending batch and its counters. */
export class ProgressRepo {
  constructor(private readonly db: Queryable) {}

  /** Every pipe with its name, state and counters (zero before its first batch), for metrics. */
  async all(): Promise<
    (Pick<
      PipeProgress,
      'pipeId' | 'filesDone' | 'filesPending' | 'rowsWritten' | 'bytesWritten' | 'badRecords'
    > & { name: string; state: string })[]
  > {
    return this.db.query(
      `select p.id as "pipeId", p.name, p.state,
              coalesce(g.files_done, 0)::float8 as "filesDone", coalesce(g.files_pending, 0)::float8 as "filesPending",
              coalesce(g.rows_written, 0)::float8 as "rowsWritten", coalesce(g.bytes_written, 0)::float8 as "bytesWritten",
              coalesce(g.bad_records, 0)::float8 as "badRecords"
         from pipes p left join pipe_progress g on g.pipe_id = p.id order by p.created_at`,
    );
  }

  async get(pipeId: string): Promise<PipeProgress | undefined> {
    const rows = await this.db.query<PipeProgress>(
      `select ${PROGRESS} from pipe_progress where pipe_id = $1`,
      [pipeId],
    );
    return rows[0];
  }

  /** The progress row of a pipe, created at `startAfter` on first use. */
  async ensure(pipeId: string, startAfter: string | null): Promise<PipeProgress> {
    await this.db.query(
      'insert into pipe_progress (pipe_id, last_key, updated_at) values ($1, $2, $3) on conflict (pipe_id) do nothing',
      [pipeId, startAfter, new Date()],
    );
    return (await this.get(pipeId)) as PipeProgress;
  }

  async setPending(pipeId: string, pending: PendingBatch | null): Promise<void> {
    await this.db.query('update pipe_progress set pending = $2::jsonb, updated_at = $3 where pipe_id = $1', [
      pipeId,
      pending === null ? null : JSON.stringify(pending),
      new Date(),
    ]);
  }

  /** The batch is in the destination: move the cursor past it, count it, clear it. */
  async commit(pipeId: string, batch: PendingBatch, at: Date): Promise<void> {
    const lastKey = batch.files.reduce((max, file) => (file.key > max ? file.key : max), '');
    const bytes = batch.files.reduce((sum, file) => sum + file.size, 0);
    await this.db.query(
      `update pipe_progress set last_key = $2, pending = null,
         files_done = files_done + $3, rows_written = rows_written + $4, bytes_written = bytes_written + $5,
         bad_records = bad_records + $6, last_insert_at = $7, updated_at = $7
       where pipe_id = $1`,
      [pipeId, lastKey, batch.files.length, batch.rows ?? 0, bytes, batch.badRecords ?? 0, at],
    );
  }

  async setFilesPending(pipeId: string, count: number): Promise<void> {
    await this.db.query('update pipe_progress set files_pending = $2 where pipe_id = $1', [pipeId, count]);
  }

  async recordError(pipeId: string, message: string | null): Promise<void> {
    const now = new Date();
    await this.db.query(
      'update pipe_progress set last_error = $2, last_error_at = case when $2::text is null then last_error_at else $3 end, updated_at = $3 where pipe_id = $1',
      [pipeId, message, now],
    );
  }

  /** Back to the start: a resync or a restarted one-off pipe reads everything again. */
  async reset(pipeId: string, startAfter: string | null): Promise<void> {
    await this.db.query(
      'update pipe_progress set last_key = $2, pending = null, updated_at = $3 where pipe_id = $1',
      [pipeId, startAfter, new Date()],
    );
  }
}
