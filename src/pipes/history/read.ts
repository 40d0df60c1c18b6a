import { ENGINE_CODES, EngineError, literal, type Queryable } from '../../engine/index.js';
import { MINUTES } from './table.js';

/** One minute of a pipe's history as read (the view of table.ts); a minute without rows reads as zero. */
export interface PipeMinute {
  /** The minute's start, ISO 8601. */
  minute: string;
  rows: number;
  bytes: number;
  batches: number;
  badRecords: number;
  /** The largest lag seen in the minute; null when nothing measured it. */
  lag: number | null;
  /** The last state of the minute; null in a minute without a row. */
  state: string | null;
  /** The last error's code in the minute; null when none. */
  errorCode: string | null;
}

const MINUTE_MS = 60_000;

/** A status's series (GET .../status `lastHour`): per minute, rows per second and the largest lag. */
export function statusSeries(minutes: readonly PipeMinute[]) {
  return minutes.map(({ minute, rows, lag }) => ({ minute, rowsPerSecond: rows / 60, lag }));
}

/**
 * Every minute of a pipe's history from `from` (rounded down to its minute) up to `to`, oldest
 * first, each minute without a row filled with zeros. No history yet (nothing written, or the
 * table dropped by an admin since): every minute zero.
 */
export async function pipeMinutes(
  engine: Queryable,
  pipeId: string,
  from: Date,
  to: Date,
): Promise<PipeMinute[]> {
  const start = Math.floor(from.getTime() / MINUTE_MS) * MINUTE_MS;
  const found = new Map<number, PipeMinute>();
  for (const row of await readMinutes(engine, pipeId, start, to.getTime())) {
    found.set(row.at, row.minute);
  }
  const minutes: PipeMinute[] = [];
  for (let at = start; at < to.getTime(); at += MINUTE_MS) {
    minutes.push(found.get(at) ?? emptyMinute(at));
  }
  return minutes;
}

async function readMinutes(engine: Queryable, pipeId: string, from: number, to: number) {
  try {
    const result = await engine.query(
      `SELECT toUnixTimestamp(minute) * 1000 AS at, rows, bytes, batches, bad_records, lag, state, error_code
         FROM ${MINUTES}
        WHERE pipe_id = ${literal(pipeId)}
          AND minute >= fromUnixTimestamp64Milli(${from}) AND minute < fromUnixTimestamp64Milli(${to})
        ORDER BY minute`,
      { readonly: true },
    );
    return result.rows.map((row) => {
      const at = Number(row.at);
      const minute: PipeMinute = {
        minute: new Date(at).toISOString(),
        rows: Number(row.rows),
        bytes: Number(row.bytes),
        batches: Number(row.batches),
        badRecords: Number(row.bad_records),
        lag: row.lag === null || row.lag === undefined ? null : Number(row.lag),
        state: String(row.state),
        errorCode: row.error_code ? String(row.error_code) : null,
      };
      return { at, minute };
    });
  } catch (error) {
    if (isMissingTable(error)) return [];
    throw error;
  }
}

const NOT_THERE = new Set<number>([ENGINE_CODES.UNKNOWN_TABLE, ENGINE_CODES.UNKNOWN_DATABASE]);

/** The history's table or database is not there (nothing written yet, or dropped by an admin). */
export function isMissingTable(error: unknown): boolean {
  return error instanceof EngineError && NOT_THERE.has(error.code ?? 0);
}

function emptyMinute(at: number): PipeMinute {
  return {
    minute: new Date(at).toISOString(),
    rows: 0,
    bytes: 0,
    batches: 0,
    badRecords: 0,
    lag: null,
    state: null,
    errorCode: null,
  };
}
