import type { Queryable } from './db.js';
import type { PipeRow } from './pipes-repo.js';

/**
 * What a deleted pipe still holds at its source (a database pipe's replication slot and
 * publication), kept with the pipe's row as it was stored (secrets still sealed) until the source
 * has given it back.
 */
export interface SourceCleanup {
  pipe: PipeRow;
  /** No other attempt takes the cleanup before this. */
  leaseUntil: Date;
  /** Attempts begun, this one included. */
  attempts: number;
  createdAt: Date;
}

interface StoredCleanup {
  pipe: PipeRow & { createdAt: string; updatedAt: string };
  attempts: number;
  createdAt: Date;
}

export class CleanupsRepo {
  constructor(private readonly db: Queryable) {}

  /**
   * Keeps a pipe being deleted for its source's cleanup, due at `dueAt` (the delete attempts it
   * itself first: the sweeps leave it until then).
   */
  async record(pipe: PipeRow, at: Date, dueAt: Date): Promise<void> {
    await this.db.query(
      `insert into source_cleanups (pipe_id, pipe, next_attempt_at, created_at) values ($1, $2::jsonb, $3, $4)
        on conflict (pipe_id) do nothing`,
      [pipe.id, JSON.stringify(pipe), dueAt, at],
    );
  }

  /** Cleanups due at `now`, the longest waiting first. */
  async due(now: Date, limit: number): Promise<string[]> {
    const rows = await this.db.query<{ pipeId: string }>(
      `select pipe_id as "pipeId" from source_cleanups where next_attempt_at <= $1
        order by next_attempt_at limit $2`,
      [now, limit],
    );
    return rows.map((row) => row.pipeId);
  }

  /**
   * Takes a due cleanup (any, with `evenIfNotDue`) for one attempt: no other attempt (here or on
   * another node) takes it before `leaseUntil`. Undefined when it is not due or gone.
   */
  async claim(
    pipeId: string,
    now: Date,
    leaseUntil: Date,
    evenIfNotDue = false,
  ): Promise<SourceCleanup | undefined> {
    const rows = await this.db.query<StoredCleanup>(
      `update source_cleanups set attempts = attempts + 1, next_attempt_at = $3
        where pipe_id = $1 and ($4 or next_attempt_at <= $2)
        returning pipe, attempts, created_at as "createdAt"`,
      [pipeId, now, leaseUntil, evenIfNotDue],
    );
    const row = rows[0];
    if (!row) return undefined;
    const pipe = {
      ...row.pipe,
      createdAt: new Date(row.pipe.createdAt),
      updatedAt: new Date(row.pipe.updatedAt),
    };
    return { pipe, leaseUntil, attempts: row.attempts, createdAt: new Date(row.createdAt) };
  }

  /**
   * An attempt that held the cleanup until `leaseUntil` failed: the next is due at
   * `nextAttemptAt`, unless another attempt took the cleanup since (this one outlived its lease).
   */
  async failed(pipeId: string, leaseUntil: Date, nextAttemptAt: Date, error: string): Promise<void> {
    await this.db.query(
      `update source_cleanups set next_attempt_at = $3, last_error = $4
        where pipe_id = $1 and next_attempt_at = $2`,
      [pipeId, leaseUntil, nextAttemptAt, error],
    );
  }

  async done(pipeId: string): Promise<void> {
    await this.db.query('delete from source_cleanups where pipe_id = $1', [pipeId]);
  }

  async pending(): Promise<number> {
    const rows = await this.db.query<{ n: number }>('select count(*)::int as n from source_cleanups');
    return Number(rows[0]?.n ?? 0);
  }
}
