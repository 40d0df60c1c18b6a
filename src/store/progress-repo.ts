import { CodedError, type ErrorCode } from '../errors.js';
import type { Queryable } from './db.js';

/** A JSON value: how a source describes a range it reads and where it has got to. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/**
 * A batch claimed by one worker slot, recorded before it is read (README, "How a pipe runs"): its
 * range says exactly what it reads, in the source's own terms (files; offsets per partition;
 * sequence numbers per shard), so a batch read again after a crash reads the same records.
 * `staged` turns true once the whole batch sits in the slot's staging tables, so recovery knows
 * whether to read it again or only to move what is staged. The row goes when the batch commits.
 */
export interface Batch {
  pipeId: string;
  seq: number;
  slot: number;
  range: Json;
  /** What the batch adds to the pipe's totals when it commits. */
  files: number;
  bytes: number;
  /** Parts of the range the engine could not read at all: set aside (into the error table), not retried. */
  skipped: { key: string; error: string }[];
  staged: boolean;
  /**
   * The batch's insert into a destination with materialized views (or Null) began: a run finding
   * it so inserts the batch again, and its rows may be there twice (runtime/batch.ts, passOn).
   */
  inserting: boolean;
  rows: number;
  badRecords: number;
}

/** What a source claims: the range, what it counts, and the cursor after it. */
export interface Claim {
  range: Json;
  files: number;
  bytes: number;
  skipped: Batch['skipped'];
  cursor: Json;
}

export interface PipeProgress {
  pipeId: string;
  /** Where the source resumes claiming (the last key listed; the next offset of each partition). */
  cursor: Json | null;
  filesDone: number;
  /** Files found after the cursor at the last listing (capped by the listing's page of work). */
  filesPending: number;
  rowsWritten: number;
  bytesWritten: number;
  badRecords: number;
  lastInsertAt: Date | null;
  lastError: string | null;
  /** The catalog code of lastError (src/error-codes.ts); null for one recorded before codes. */
  lastErrorCode: string | null;
  lastErrorAt: Date | null;
}

const PROGRESS = `pipe_id as "pipeId", cursor, files_done::float8 as "filesDone",
  files_pending::float8 as "filesPending", rows_written::float8 as "rowsWritten",
  bytes_written::float8 as "bytesWritten", bad_records::float8 as "badRecords",
  last_insert_at as "lastInsertAt", last_error as "lastError", last_error_code as "lastErrorCode",
  last_error_at as "lastErrorAt"`;
const BATCH = `pipe_id as "pipeId", seq::float8 as seq, slot, range, files_count::float8 as files,
  bytes::float8 as bytes, skipped, staged, inserting, rows::float8 as rows, bad_records::float8 as "badRecords"`;

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

  /** The Failed pipes with their last error's code ('' when none), in one statement for the history's minute rows. */
  async failedWithCodes(): Promise<{ pipeId: string; errorCode: string }[]> {
    return this.db.query(
      `select p.id as "pipeId", coalesce(g.last_error_code, '') as "errorCode"
         from pipes p left join pipe_progress g on g.pipe_id = p.id
        where p.state = 'Failed' order by p.created_at`,
    );
  }

  async get(pipeId: string): Promise<PipeProgress | undefined> {
    const rows = await this.db.query<PipeProgress>(
      `select ${PROGRESS} from pipe_progress where pipe_id = $1`,
      [pipeId],
    );
    return rows[0];
  }

  /**
   * The progress row with the files of the batches still open, in one statement: `/status` reads
   * it on every call, and a client polling it should cost the store one query, not two.
   */
  async withClaimedFiles(pipeId: string): Promise<(PipeProgress & { filesClaimed: number }) | undefined> {
    const rows = await this.db.query<PipeProgress & { filesClaimed: number }>(
      `select ${PROGRESS},
              (select coalesce(sum(files_count), 0) from pipe_batches where pipe_id = $1)::float8 as "filesClaimed"
         from pipe_progress where pipe_id = $1`,
      [pipeId],
    );
    return rows[0];
  }

  /** The progress row of a pipe, created at the source's first cursor on first use. */
  /**
   * The pipe's progress row, made with the source's first cursor; a row recordError made before
   * the first run got that far (a setup that failed) has no cursor yet, and takes this one.
   */
  async ensure(pipeId: string, cursor: Json | null): Promise<PipeProgress> {
    await this.db.query(
      `insert into pipe_progress (pipe_id, cursor, updated_at) values ($1, $2::jsonb, $3)
       on conflict (pipe_id) do update set cursor = excluded.cursor where pipe_progress.cursor is null`,
      [pipeId, JSON.stringify(cursor), new Date()],
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
   * Claims a range for a slot: the batch is recorded and the cursor moves past it together, so no
   * two slots ever read the same records. Call inside a transaction. With `after`, only from that
   * cursor: a run keeps the cursor it moved last (src/pipes/runtime/run-progress.ts), and one that
   * moved under it (another run of the pipe claimed meanwhile) fails the claim, which the
   * transaction then undoes, rather than letting two runs claim the same range.
   */
  async claim(pipeId: string, slot: number, claim: Claim, after?: { cursor: Json | null }): Promise<Batch> {
    const rows = await this.db.query<{ seq: number }>(
      'select coalesce(max(seq), 0)::float8 + 1 as seq from pipe_batches where pipe_id = $1',
      [pipeId],
    );
    const seq = rows[0]?.seq ?? 1;
    await this.db.query(
      `insert into pipe_batches (pipe_id, seq, slot, range, files_count, bytes, skipped)
       values ($1, $2, $3, $4::jsonb, $5, $6, $7::jsonb)`,
      [
        pipeId,
        seq,
        slot,
        JSON.stringify(claim.range),
        claim.files,
        claim.bytes,
        JSON.stringify(claim.skipped),
      ],
    );
    // A cursor made by recordError before the first run is SQL null; one made by ensure, JSON null.
    const moved = await this.db.query(
      `update pipe_progress set cursor = $2::jsonb, updated_at = $3
        where pipe_id = $1 and ($4::jsonb is null or coalesce(cursor, 'null'::jsonb) = $4::jsonb)
        returning pipe_id`,
      [pipeId, JSON.stringify(claim.cursor), new Date(), after ? JSON.stringify(after.cursor) : null],
    );
    if (moved.length === 0)
      throw new CodedError(
        'SLUICE_ERR_CURSOR_MOVED',
        "the pipe's position moved while its run claimed the next range (another run of the same pipe claimed meanwhile): the run starts again from the stored position",
      );
    const { range, files, bytes, skipped } = claim;
    return {
      pipeId,
      seq,
      slot,
      range,
      files,
      bytes,
      skipped,
      staged: false,
      inserting: false,
      rows: 0,
      badRecords: 0,
    };
  }

  /**
   * Moves a pipe's cursor back or aside: the open batches named (all when none are) are forgotten,
   * as a database pipe's resync or the tables added to it read them again their own way. Call
   * inside a transaction.
   */
  async reset(pipeId: string, cursor: Json, forget?: readonly number[]): Promise<void> {
    if (forget === undefined) await this.db.query('delete from pipe_batches where pipe_id = $1', [pipeId]);
    else if (forget.length > 0)
      await this.db.query('delete from pipe_batches where pipe_id = $1 and seq = any($2::int8[])', [
        pipeId,
        forget,
      ]);
    await this.db.query('update pipe_progress set cursor = $2::jsonb, updated_at = $3 where pipe_id = $1', [
      pipeId,
      JSON.stringify(cursor),
      new Date(),
    ]);
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

  /** The staged batch's first insert into a destination with views begins (Batch.inserting). */
  async setInserting(batch: Batch): Promise<void> {
    await this.db.query('update pipe_batches set inserting = true where pipe_id = $1 and seq = $2', [
      batch.pipeId,
      batch.seq,
    ]);
  }

  /** The batch is in the destination: count it and forget it. Call inside a transaction. */
  async commit(batch: Batch, at: Date): Promise<void> {
    await this.db.query('delete from pipe_batches where pipe_id = $1 and seq = $2', [
      batch.pipeId,
      batch.seq,
    ]);
    await this.db.query(
      `update pipe_progress set files_done = files_done + $2, rows_written = rows_written + $3,
         bytes_written = bytes_written + $4, bad_records = bad_records + $5, last_insert_at = $6, updated_at = $6
       where pipe_id = $1`,
      [batch.pipeId, batch.files, batch.rows, batch.bytes, batch.badRecords, at],
    );
  }

  async setFilesPending(pipeId: string, count: number): Promise<void> {
    await this.db.query('update pipe_progress set files_pending = $2 where pipe_id = $1', [pipeId, count]);
  }

  /**
   * The pipe's last error and its code (null: the error passed, its time stays). A pipe whose
   * first run failed before its progress row was made (a database pipe's setup) gets one, without
   * a cursor (ensure).
   */
  async recordError(pipeId: string, message: null): Promise<void>;
  async recordError(pipeId: string, message: string, code: ErrorCode): Promise<void>;
  async recordError(pipeId: string, message: string | null, code?: ErrorCode): Promise<void> {
    const now = new Date();
    if (message === null) {
      await this.db.query(
        'update pipe_progress set last_error = null, last_error_code = null, updated_at = $2 where pipe_id = $1',
        [pipeId, now],
      );
      return;
    }
    // A pipe deleted meanwhile gets no row.
    await this.db.query(
      `insert into pipe_progress (pipe_id, cursor, last_error, last_error_code, last_error_at, updated_at)
       select id, null, $2, $3, $4, $4 from pipes where id = $1::uuid
       on conflict (pipe_id) do update set last_error = $2, last_error_code = $3, last_error_at = $4, updated_at = $4`,
      [pipeId, message, code, now],
    );
  }
}
