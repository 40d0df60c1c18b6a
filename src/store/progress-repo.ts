import type { Queryable } from './db.js';

export interface BatchFile {
  key: string;
  size: number;
}

/**
 * A batch of files claimed by one worker slot, recorded before it is read (DESIGN.md,
 * "Checkpoints and exactly-once"): `staged` turns true once the whole batch sits in the slot's
 * staging tables, so recovery knows whether to read the batch again or only to move what is staged.
 * The row goes when the batch is committed.
 */
export interface Batch {
  pipeId: string;
  seq: number;
  slot: number;
  files: BatchFile[];
  /** Files the engine could not read at all: set aside (into the error table), not retried. */
  skipped: { key: string; error: string }[];
  staged: boolean;
  rows: number;
  badRecords: number;
}

export interface PipeProgress {
  pipeId: string;
  /** The last key claimed: listing resumes after it. */
  lastKey: string | null;
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

const PROGRESS = `pipe_id as "pipeId", last_key as "lastKey", files_done::float8 as "filesDone",
  files_pending::float8 as "filesPending", rows_written::float8 as "rowsWritten",
  bytes_written::float8 as "bytesWritten", bad_records::float8 as "badRecords",
  last_insert_at as "lastInsertAt", last_error as "lastError", last_error_at as "lastErrorAt"`;
const BATCH = `pipe_id as "pipeId", seq::float8 as seq, slot, files, skipped, staged, rows::float8 as rows,
  bad_records::float8 as "badRecords"`;

/** Where each pipe is: its claim cursor, its open batches and its counters. */
export class ProgressRepo {
  constructor(private readonly db: Queryable) {}

  /** Every pipe with its name, state and counters (zero before its first batch), for metrics. */
  async all(): Promise<
    (Pick<
      PipeProgress,
      'pipeId' | 'filesDone' | 'filesPending' | 'rowsWritten' | 'bytesWritten' | 'badRecords'
    > & {
      name: string;
      state: string;
    })[]
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

  /** Batches claimed and not yet committed, in claim order. */
  async openBatches(pipeId: string): Promise<Batch[]> {
    return this.db.query<Batch>(`select ${BATCH} from pipe_batches where pipe_id = $1 order by seq`, [
      pipeId,
    ]);
  }

  /**
   * Claims files for a slot: the batch is recorded and the claim cursor moves past its last key
   * together, so no two slots ever read the same file. Call inside a transaction.
   */
  async claim(pipeId: string, slot: number, files: BatchFile[], skipped: Batch['skipped']): Promise<Batch> {
    const rows = await this.db.query<{ seq: number }>(
      'select coalesce(max(seq), 0)::float8 + 1 as seq from pipe_batches where pipe_id = $1',
      [pipeId],
    );
    const seq = rows[0]?.seq ?? 1;
    await this.db.query(
      'insert into pipe_batches (pipe_id, seq, slot, files, skipped) values ($1, $2, $3, $4::jsonb, $5::jsonb)',
      [pipeId, seq, slot, JSON.stringify(files), JSON.stringify(skipped)],
    );
    await this.db.query('update pipe_progress set last_key = $2, updated_at = $3 where pipe_id = $1', [
      pipeId,
      files[files.length - 1]?.key ?? null,
      new Date(),
    ]);
    return { pipeId, seq, slot, files, skipped, staged: false, rows: 0, badRecords: 0 };
  }

  async setSkipped(batch: Batch): Promise<void> {
    await this.db.query('update pipe_batches set skipped = $3::jsonb where pipe_id = $1 and seq = $2', [
      batch.pipeId,
      batch.seq,
      JSON.stringify(batch.skipped),
    ]);
  }

  async setStaged(batch: Batch): Promise<void> {
    await this.db.query(
      'update pipe_batches set staged = true, rows = $3, bad_records = $4 where pipe_id = $1 and seq = $2',
      [batch.pipeId, batch.seq, batch.rows, batch.badRecords],
    );
  }

  /** The batch is in the destination: count it and forget it. Call inside a transaction. */
  async commit(batch: Batch, at: Date): Promise<void> {
    const bytes = batch.files.reduce((sum, file) => sum + file.size, 0);
    await this.db.query('delete from pipe_batches where pipe_id = $1 and seq = $2', [
      batch.pipeId,
      batch.seq,
    ]);
    await this.db.query(
      `update pipe_progress set files_done = files_done + $2, rows_written = rows_written + $3,
         bytes_written = bytes_written + $4, bad_records = bad_records + $5, last_insert_at = $6, updated_at = $6
       where pipe_id = $1`,
      [batch.pipeId, batch.files.length, batch.rows, bytes, batch.badRecords, at],
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
}
