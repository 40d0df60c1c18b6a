/** Messages between the API process and an embedded service's engine process. */
export interface EngineRequest {
  id: number;
  sql: string;
  /** Output format; JSON for queries that return rows, absent for statements. */
  format?: 'JSON';
  /**
   * Who runs the statement. Absent: Sluice's own runtime, on one of the process's long-lived connections.
   * `admin` and `reader`: a user's SQL, each on a connection of its own opened for this statement
   * and closed after it, so nothing it sets outlives it; `reader` connections are read-only.
   */
  caller?: 'admin' | 'reader';
  /** Settings of a caller's connection, given when it opens (a read-only one cannot change them later). */
  settings?: Record<string, string>;
  /**
   * A caller's rows go to this file (of the service's scratch space) as they come, in
   * RESULT_FILE_FORMAT, instead of the reply: the API process reads them back a row at a time, so
   * no whole result is held by it. Statements without rows (DDL, INSERT) leave an empty file.
   */
  resultFile?: { path: string; maxBytes: number };
  /**
   * Sluice's own SELECT whose rows go, as Native blocks, into these FIFOs of the service's scratch
   * space as they come, each block into one of them, once the service's engine reads each
   * (src/pipes/records/stream-load.ts): the reply's text is the number of rows written. Removing
   * a FIFO before anything reads it ends the wait.
   */
  produceInto?: { paths: readonly string[] };
}

/** A result file's format: a line of column names, a line of types, then a JSON array per row. */
export const RESULT_FILE_FORMAT = 'JSONCompactEachRowWithNamesAndTypes';

export type EngineReply =
  | { id: number; ok: true; text: string }
  | { id: number; ok: false; error: string }
  /** A caller's statement starts running now (its time limit counts from here, not from its send). */
  | { id: number; started: true };

/** The first message of an engine process: ready, or why it could not open its data directory. */
export type EngineHello = { ready: true } | { ready: false; error: string };

/**
 * The engine's owner closes it: the process closes its sessions and ends. Without this message
 * first, a disconnect means the owner died, and the process ends at once (child.ts).
 */
export type EngineClose = { close: true };
