import type { ErrorCode } from '../errors.js';

/** A column as the engine describes it. */
export interface EngineColumn {
  name: string;
  type: string;
}

export interface QueryResult {
  columns: EngineColumn[];
  rows: Record<string, unknown>[];
}

/**
 * A statement's rows as they are read back, never all held at once (a user's statement, whose
 * result may be as large as the engine allows): `rowsJson` is the rows as JSON objects separated
 * by commas, without the brackets around them, in pieces. `close` frees what holds them;
 * `rowsJson` closes at its end.
 */
export interface RowStream {
  columns: EngineColumn[];
  rowsJson: AsyncIterable<Buffer>;
  close(): Promise<void>;
}

/** Every row of a stream, held at once: for a command's table on a terminal, never for the API. */
export async function readAllRows(stream: RowStream): Promise<QueryResult> {
  const pieces: Buffer[] = [Buffer.from('[')];
  for await (const piece of stream.rowsJson) pieces.push(piece);
  pieces.push(Buffer.from(']'));
  return { columns: stream.columns, rows: JSON.parse(Buffer.concat(pieces).toString('utf8')) };
}

export interface QueryOptions {
  /**
   * Refuse anything that writes or changes a setting (the engine's `readonly = 1`, given when the
   * statement's own connection opens, so the statement cannot lift it). Same as caller `reader`.
   */
  readonly?: boolean;
  /**
   * SQL a user wrote runs as its caller, on a connection of its own that closes after the statement:
   * nothing it sets reaches Sluice's runtime or the next caller. Absent: Sluice's own statement.
   */
  caller?: 'admin' | 'reader';
  /** Stop the query in the engine after this long (its `max_execution_time`). */
  timeoutMs?: number;
  /** Further engine settings for this statement. */
  settings?: Record<string, string | number | boolean>;
}

/**
 * What runs statements and nothing more: no scratch files, no closing. The runtime hands sources
 * this much of an engine (src/pipes/sources/ports.ts), and helpers that only run SQL take it.
 */
export type Queryable = Pick<Engine, 'query' | 'execute'>;

/**
 * A database service's engine (docs/engine-sandbox.md). Embedded services run chDB; a ClickHouse
 * server will speak the same SQL over HTTP. Statements are ClickHouse SQL; callers quote every
 * identifier and literal with `sql.ts`.
 */
export interface Engine {
  /** Runs a statement that returns no rows (DDL, INSERT ... SELECT, ALTER). */
  execute(sql: string, options?: QueryOptions): Promise<void>;
  /** Runs a statement and returns its columns and rows. */
  query(sql: string, options?: QueryOptions): Promise<QueryResult>;
  /**
   * Runs a caller's statement (options.caller) to its end, then gives its rows to read one at a
   * time: a result of any size (up to `maxBytes`) passes without being held whole.
   */
  queryRows(sql: string, options: QueryOptions & { maxBytes: number }): Promise<RowStream>;
  /**
   * Runs Sluice's own SELECT and writes its rows as Native blocks into the FIFOs at `paths` (of the
   * service's scratch space) as they come, once something reads each, a block into whichever is
   * free; the rows written. Gives up when a FIFO is removed before anything reads it
   * (src/pipes/records/stream-load.ts).
   */
  produceInto(sql: string, paths: readonly string[], options?: QueryOptions): Promise<number>;
  /** A path the engine itself may write and read (for files the engine writes, like error logs). */
  scratchPath(name: string): string;
  removeScratch(name: string): Promise<void>;
  /**
   * Starts the engine's process now if it is not running, so the next statement does not wait for
   * it (a pipe's run warms its source reader while its source opens: runner.ts).
   */
  warm(): Promise<void>;
  close(): Promise<void>;
}

/**
 * An error the engine reported, with its ClickHouse error code when it gave one, and the catalog's
 * code of its condition (src/error-codes.ts) beside it.
 */
export class EngineError extends Error {
  readonly condition: ErrorCode;

  constructor(
    message: string,
    readonly code: number | undefined,
    condition?: ErrorCode,
  ) {
    super(message);
    this.name = 'EngineError';
    this.condition = condition ?? engineCondition(code);
  }

  /** `Code: 81. DB::Exception: Database nope does not exist. (UNKNOWN_DATABASE)` -> 81 and the text. */
  static fromEngineText(text: string): EngineError {
    const match = /Code:\s*(\d+)\.\s*(?:DB::Exception:\s*)?([\s\S]*)/.exec(text);
    if (!match) return new EngineError(text, undefined);
    return new EngineError(cleanMessage(match[2] ?? text), Number(match[1]));
  }
}

/** Drops the engine's stack traces and version suffix, which say nothing to a user. */
function cleanMessage(text: string): string {
  return text
    .replace(/\s*\(version [^)]*\)\s*$/, '')
    .replace(/\s*Stack trace[\s\S]*$/, '')
    .trim();
}

/**
 * The engine cannot run statements now: its process could not open the service's data (another
 * process, such as the engine of a server that was just killed, still holds it) or stopped.
 */
export class EngineUnavailableError extends EngineError {
  constructor(message: string) {
    super(message, undefined, 'SLUICE_ERR_ENGINE_UNAVAILABLE');
    this.name = 'EngineUnavailableError';
  }
}

/**
 * The statement ran past its time limit, though it lifted the engine's own (`max_execution_time`):
 * its engine process was ended to stop it. Carries the engine's TIMEOUT_EXCEEDED code, as the
 * engine's own stop would.
 */
export class StatementTimeLimitError extends EngineError {
  constructor(timeoutMs: number) {
    super(
      `the statement ran past its time limit of ${Math.ceil(timeoutMs / 1000)} s, which no setting lifts: its engine process was stopped to end it and starts again with the next statement`,
      ENGINE_CODES.TIMEOUT_EXCEEDED,
      'SLUICE_ERR_STATEMENT_TIME_LIMIT',
    );
    this.name = 'StatementTimeLimitError';
  }
}

/** The statement ran but its output is not the JSON result asked for (it named its own FORMAT). */
export class UnreadableResultError extends EngineError {
  constructor() {
    super(
      'the statement printed its result in a FORMAT of its own: leave the FORMAT clause out, results come back as JSON',
      undefined,
      'SLUICE_ERR_ENGINE_RESULT_FORMAT',
    );
    this.name = 'UnreadableResultError';
  }
}

/**
 * Errors that say the file itself cannot be read as declared: its bytes, its format, its
 * compression. Only those set a file aside; anything else (the network, the disk, a table that
 * changed) may pass, so the pipe retries instead of losing the file.
 */
const BAD_DATA_CODES = new Set([
  6, // CANNOT_PARSE_TEXT
  26, // CANNOT_PARSE_QUOTED_STRING
  27, // CANNOT_PARSE_INPUT_ASSERTION_FAILED
  32, // ATTEMPT_TO_READ_AFTER_EOF
  33, // CANNOT_READ_ALL_DATA
  38, // CANNOT_PARSE_DATE
  41, // CANNOT_PARSE_DATETIME
  69, // ARGUMENT_OUT_OF_BOUND
  72, // CANNOT_PARSE_NUMBER
  117, // INCORRECT_DATA
  131, // TOO_LARGE_STRING_SIZE
  354, // CANNOT_DECOMPRESS
  432, // UNKNOWN_CODEC
  434, // CANNOT_PARSE_PROTOBUF_SCHEMA
  441, // CANNOT_PARSE_UUID
  457, // VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE
  459, // CANNOT_PARSE_IPV4
  460, // CANNOT_PARSE_IPV6
  485, // ZSTD_DECODER_FAILED
  541, // CANNOT_PARSE_BOOL
  636, // CANNOT_EXTRACT_TABLE_STRUCTURE
  748, // AVRO_EXCEPTION (a record the Avro reader cannot decode)
  1001, // STD_EXCEPTION (Arrow and Parquet readers report bad files through it)
]);

/** Errors of a table that no longer fits the pipe (a column gone, a type changed): the pipe fails. */
export const SCHEMA_CODES = new Set([8, 16, 47, 53, 70]);

/**
 * Errors of a statement that waiting cannot fix: its SQL or the table it names (syntax, an unknown
 * type, function or column, a type mismatch, a refused right or setting). A pipe that meets one
 * while preparing or moving fails with the reason instead of retrying for ever.
 */
const DEFINITION_CODES = new Set([
  ...SCHEMA_CODES,
  10, // NOT_FOUND_COLUMN_IN_BLOCK
  36, // BAD_ARGUMENTS
  43, // ILLEGAL_TYPE_OF_ARGUMENT
  44, // ILLEGAL_COLUMN
  46, // UNKNOWN_FUNCTION
  50, // UNKNOWN_TYPE
  62, // SYNTAX_ERROR
  164, // READONLY
  452, // SETTING_CONSTRAINT_VIOLATION
  497, // ACCESS_DENIED
]);

/** The catalog's code for an engine's numeric code (src/error-codes.ts). */
function engineCondition(code: number | undefined): ErrorCode {
  if (code === undefined) return 'SLUICE_ERR_ENGINE';
  if (code === ENGINE_CODES.TIMEOUT_EXCEEDED) return 'SLUICE_ERR_STATEMENT_TIME_LIMIT';
  if (SCHEMA_CODES.has(code)) return 'SLUICE_ERR_DESTINATION_MISMATCH';
  if (DEFINITION_CODES.has(code)) return 'SLUICE_ERR_ENGINE_DEFINITION';
  if (BAD_DATA_CODES.has(code)) return 'SLUICE_ERR_ENGINE_BAD_DATA';
  return 'SLUICE_ERR_ENGINE';
}

export function isDefinitionError(error: unknown): boolean {
  return error instanceof EngineError && error.code !== undefined && DEFINITION_CODES.has(error.code);
}

/** The engine says the data itself cannot be read as declared: a part or record to set aside. */
export function isBadDataEngineError(error: unknown): boolean {
  return error instanceof EngineError && error.code !== undefined && BAD_DATA_CODES.has(error.code);
}

/**
 * Whether an error may pass if the statement runs again: the engine unavailable or out of time, an
 * engine error with no code or one of neither kind below, and anything that is not the engine's
 * (the network, the disk). Bad data and a statement's definition (syntax, types, rights) never do.
 */
export function isTransientEngineError(error: unknown): boolean {
  if (!(error instanceof EngineError)) return true;
  return (
    error.condition === 'SLUICE_ERR_ENGINE_UNAVAILABLE' ||
    error.condition === 'SLUICE_ERR_STATEMENT_TIME_LIMIT' ||
    error.condition === 'SLUICE_ERR_ENGINE'
  );
}

export const ENGINE_CODES = {
  FILE_DOESNT_EXIST: 107,
  UNKNOWN_TABLE: 60,
  UNKNOWN_DATABASE: 81,
  TIMEOUT_EXCEEDED: 159,
  READONLY: 164,
  TOO_MANY_ROWS_OR_BYTES: 396,
} as const;
