import { ensureDatabase, type Queryable, tableName, tableStorage } from '../../engine/index.js';

/**
 * A pipe's history in its own service (README, "Pipe history"): the database Sluice keeps there,
 * the table the runtime writes (one row per committed batch, staged and moved with the batch, and
 * one per state the runtime moved the pipe to), and the view that reads it per minute.
 */
export const HISTORY_DATABASE = '_sluice_history';
export const EVENTS_TABLE = 'pipe_events';
export const MINUTES_VIEW = 'pipe_minutes';

export const EVENTS = tableName(HISTORY_DATABASE, EVENTS_TABLE);

/** What the alerts area's built-in source of each service reads: the per-minute view. */
export const PIPE_HISTORY_SOURCE = {
  databaseName: HISTORY_DATABASE,
  tableName: MINUTES_VIEW,
  timestampExpression: 'minute',
} as const;
export const MINUTES = tableName(HISTORY_DATABASE, MINUTES_VIEW);

/** The TTL clause that keeps `days` of history; whole days' parts are dropped (ttl_only_drop_parts). */
function ttlOf(days: number): string {
  return `toDateTime(at) + toIntervalDay(${Math.trunc(days)})`;
}

/**
 * The events table. A plain MergeTree (nothing deduplicates: a batch's row is there once because
 * it moves with the batch, src/pipes/runtime/batch.ts), a partition per day, ordered by pipe.
 */
function eventsTableSql(days: number): string {
  return `CREATE TABLE IF NOT EXISTS ${EVENTS} (
  at DateTime64(3, 'UTC'),
  pipe_id LowCardinality(String),
  pipe_name LowCardinality(String),
  kind LowCardinality(String),
  batch String,
  rows UInt64,
  bytes UInt64,
  bad_records UInt64,
  lag Nullable(Int64),
  lag_parts Map(String, Int64),
  state LowCardinality(String),
  error_code LowCardinality(String),
  source_age_ms Nullable(UInt64)
) ENGINE = MergeTree PARTITION BY toYYYYMMDD(at) ORDER BY (pipe_id, at) TTL ${ttlOf(days)} SETTINGS ttl_only_drop_parts = 1`;
}

/**
 * Per pipe and minute with something in it: what its batches wrote and set aside, the largest lag
 * seen (in all, and per partition, shard or table), the last state, the transitions (minute rows
 * are not), the last error's code and the oldest record's age. A minute without a row reads as
 * nothing (zero rows, in an alert's window). Replaced at each ensure, so a Sluice that changed it
 * brings it up to date.
 */
function minutesViewSql(): string {
  return `CREATE OR REPLACE VIEW ${MINUTES} AS
SELECT
  toStartOfMinute(e.at) AS minute,
  e.pipe_id AS pipe_id,
  any(e.pipe_name) AS pipe_name,
  sum(e.rows) AS rows,
  sum(e.bytes) AS bytes,
  countIf(e.kind = 'batch') AS batches,
  sum(e.bad_records) AS bad_records,
  max(e.lag) AS lag,
  maxMap(e.lag_parts) AS lag_parts,
  argMax(e.state, e.at) AS state,
  countIf(e.kind = 'state') AS transitions,
  argMaxIf(e.error_code, e.at, e.error_code != '') AS error_code,
  max(e.source_age_ms) AS source_age_ms
FROM ${EVENTS} AS e
GROUP BY minute, pipe_id`;
}

/**
 * Makes the history's database, table and view where they are missing (an admin may drop them;
 * they come back), and keeps `days` of it: a changed retention changes the table's TTL.
 */
export function ensureHistory(engine: Queryable, days: number): Promise<void> {
  const current = ensuring.get(engine);
  if (current?.days === days) return current.done;
  const done = makeHistory(engine, days).finally(() => {
    if (ensuring.get(engine)?.done === done) ensuring.delete(engine);
  });
  ensuring.set(engine, { days, done });
  return done;
}

/**
 * The ensures under way, per engine: callers at the same moment share one (a service's first pipe
 * asks from its first batch's stages and from its first state row at once).
 */
const ensuring = new WeakMap<Queryable, { days: number; done: Promise<void> }>();

async function makeHistory(engine: Queryable, days: number): Promise<void> {
  await ensureDatabase(engine, HISTORY_DATABASE);
  await engine.execute(eventsTableSql(days));
  const storage = await tableStorage(engine, HISTORY_DATABASE, EVENTS_TABLE);
  if (storage && !storage.clauses.TTL?.includes(`toIntervalDay(${Math.trunc(days)})`)) {
    await engine.execute(`ALTER TABLE ${EVENTS} MODIFY TTL ${ttlOf(days)}`);
  }
  await engine.execute(minutesViewSql());
}
