import type { Queryable } from '../../engine/index.js';
import { EVENTS } from './table.js';

/** A pipe's lag at a moment: its total, and each partition's, shard's or table's where it has them. */
export interface PipeLag {
  total: number;
  parts: Record<string, number>;
}

/**
 * One row of a pipe's history (table.ts): a committed batch, a state the runtime moved it to, or a
 * minute's look at a pipe that is in trouble or waiting (src/pipes/runtime/history-recorder.ts).
 */
export interface HistoryEvent {
  at: Date;
  pipeId: string;
  pipeName: string;
  kind: 'batch' | 'state' | 'minute';
  /**
   * The committed batch's own id (made when it is staged: a batch staged once and moved after a
   * crash keeps it); '' for a state.
   */
  batch: string;
  rows: number;
  bytes: number;
  badRecords: number;
  lag: PipeLag | undefined;
  state: string;
  /** The last error's catalog code (src/error-codes.ts), '' when none. */
  errorCode: string;
  /** Milliseconds from the batch's oldest record at its source to the batch staged; undefined when the source does not say. */
  sourceAgeMs: number | undefined;
}

/** A state the runtime moved a pipe to, as a row of its history (nothing written, no lag). */
export function stateEvent(
  pipe: { pipeId: string; pipeName: string },
  state: string,
  errorCode: string,
  at = new Date(),
): HistoryEvent {
  return {
    at,
    ...pipe,
    kind: 'state',
    batch: '',
    rows: 0,
    bytes: 0,
    badRecords: 0,
    lag: undefined,
    state,
    errorCode,
    sourceAgeMs: undefined,
  };
}

/** A minute's row of a pipe that is not Running, or is Running stalled behind its source: its state and last lag. */
export function minuteEvent(
  pipe: { pipeId: string; pipeName: string },
  state: string,
  errorCode: string,
  lag: PipeLag | undefined,
): HistoryEvent {
  return { ...stateEvent(pipe, state, errorCode), kind: 'minute', lag };
}

/** The INSERT of events into `into` (the events table, or a batch's stage of it). */
export function insertEventsSql(into: string, events: readonly HistoryEvent[]): string {
  const lines = events.map((event) =>
    JSON.stringify({
      at: event.at.toISOString().replace('T', ' ').replace('Z', ''),
      pipe_id: event.pipeId,
      pipe_name: event.pipeName,
      kind: event.kind,
      batch: event.batch,
      rows: event.rows,
      bytes: event.bytes,
      bad_records: event.badRecords,
      lag: event.lag?.total ?? null,
      lag_parts: event.lag?.parts ?? {},
      state: event.state,
      error_code: event.errorCode,
      source_age_ms: event.sourceAgeMs === undefined ? null : Math.max(0, Math.round(event.sourceAgeMs)),
    }),
  );
  return `INSERT INTO ${into} FORMAT JSONEachRow\n${lines.join('\n')}`;
}

/** Writes events straight into the table (a state: nothing stages it). */
export async function recordEvents(engine: Queryable, events: readonly HistoryEvent[]): Promise<void> {
  if (events.length > 0) await engine.execute(insertEventsSql(EVENTS, events));
}
