import { stat } from 'node:fs/promises';
import { ENGINE_CODES, EngineError, literal, type Queryable, tableName } from '../../engine/index.js';

/** A record the pipe could not write: where it was, why, and the record as it came. */
export interface BadRecord {
  source: string;
  row: number;
  error: string;
  raw: string;
  /** The table it was meant for, when the pipe writes several (a database pipe's mappings). */
  table?: string;
}

/** How long bad records are kept in the error table. */
export const ERROR_RETENTION_DAYS = 30;

export function errorTableName(table: string): string {
  return `${table}_pipes_error`;
}

/** `<table>_pipes_error` beside the destination (README, "How a pipe runs"). */
export async function ensureErrorTable(engine: Queryable, database: string, table: string): Promise<void> {
  await engine.execute(
    `CREATE TABLE IF NOT EXISTS ${tableName(database, errorTableName(table))} (
       time DateTime64(3), pipe_id String, source String, row UInt64, error String, raw String
     ) ENGINE = MergeTree ORDER BY (pipe_id, time) TTL toDateTime(time) + INTERVAL ${ERROR_RETENTION_DAYS} DAY`,
  );
}

/** The newest bad records of one pipe, as `sluice pipes errors` asks for them. */
export function errorRowsQuery(database: string, table: string, pipeId: string, limit: number): string {
  return `SELECT time, source, row, error, raw FROM ${tableName(database, errorTableName(table))}
          WHERE pipe_id = ${literal(pipeId)} ORDER BY time DESC, row DESC LIMIT ${Math.trunc(limit)}`;
}

export async function insertBadRecords(
  engine: Queryable,
  into: string,
  pipeId: string,
  records: BadRecord[],
) {
  if (records.length === 0) return;
  const time = new Date().toISOString().replace('T', ' ').replace('Z', '');
  const lines = records.map((r) =>
    JSON.stringify({ time, pipe_id: pipeId, source: r.source, row: r.row, error: r.error, raw: r.raw }),
  );
  await engine.execute(
    `INSERT INTO ${into} (time, pipe_id, source, row, error, raw) FORMAT JSONEachRow\n${lines.join('\n')}`,
  );
}

/**
 * The rows the engine skipped while reading a file with `input_format_allow_errors_ratio = 1` and
 * `input_format_record_errors_file_path`: the engine isolates bad rows itself, so clean files
 * take the fast path unchanged. [] when it skipped none (it writes no file then).
 */
export async function readSkippedRows(
  engine: Queryable,
  path: string,
): Promise<{ row: number; error: string; raw: string }[]> {
  // The file is in the service's scratch directory, on this host (engine.ts, scratchPath): most
  // loads skip nothing, and a look at the directory spares the engine a round trip (an empty
  // file, which some loads leave, holds no skipped row either).
  if (!(await holdsAnything(path))) return [];
  try {
    const result = await engine.query(
      `SELECT row, error, raw FROM file(${literal(path)}, 'CSV', 'time String, database String, table String, row UInt64, error String, raw String')`,
    );
    return result.rows.map((r) => ({ row: Number(r.row), error: String(r.error), raw: String(r.raw) }));
  } catch (error) {
    if (error instanceof EngineError && error.code === ENGINE_CODES.FILE_DOESNT_EXIST) return [];
    throw error;
  }
}

/**
 * Fills in what the engine leaves out for some formats (JSON rows come without their text or
 * reason): the raw lines, read again through the engine, and each row's own parse error.
 */
export async function explainSkippedRows(
  engine: Queryable,
  skipped: { row: number; error: string; raw: string }[],
  options: {
    source: string;
    /** The file as one `line String` per row (LineAsString), to look raw rows up by number. */
    linesFrom: string;
    /** Rows before the first record (a header line). */
    headerLines: number;
    /** Parses one raw record with the pipe's format and structure, to learn why it fails. */
    parseOne: (raw: string) => string;
  },
): Promise<BadRecord[]> {
  const missingRaw = skipped.filter((s) => s.raw === '').map((s) => s.row + options.headerLines);
  const lines = new Map<number, string>();
  if (missingRaw.length > 0) {
    const found = await engine.query(
      `SELECT rowNumberInAllBlocks() + 1 AS n, line FROM ${options.linesFrom} WHERE n IN (${missingRaw.join(', ')})`,
      { settings: { max_threads: 1 } },
    );
    for (const row of found.rows) lines.set(Number(row.n), String(row.line));
  }
  const records: BadRecord[] = [];
  for (const [index, skip] of skipped.entries()) {
    const raw = skip.raw || lines.get(skip.row + options.headerLines) || '';
    let error = skip.error.replace(/<LINE FEED>/g, '\\n').trim();
    if (!error && index < MAX_EXPLAINED) error = await whyRecordFails(engine, options.parseOne(raw));
    records.push({ source: options.source, row: skip.row, error: error || 'the record does not parse', raw });
  }
  return records;
}

/** How many skipped records of one read are parsed again on their own to learn why. */
export const MAX_EXPLAINED = 100;

/** Why one record fails: the engine's own message for parsing it alone (`sql` parses it). */
export async function whyRecordFails(engine: Queryable, sql: string): Promise<string> {
  try {
    await engine.query(sql);
    return 'the record does not fit the destination columns';
  } catch (error) {
    return error instanceof Error
      ? error.message.replace(/\s*:\s*While executing[\s\S]*$/, '')
      : String(error);
  }
}

/**
 * Whether a file of the host is there and holds anything: a scratch file the engine writes only
 * when it has to, or leaves empty (every record of a batch skipped leaves an empty Native file).
 */
export async function holdsAnything(path: string): Promise<boolean> {
  return stat(path).then(
    (stats) => stats.size > 0,
    () => false,
  );
}
