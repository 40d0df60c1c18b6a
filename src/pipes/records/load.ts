import { EngineError, literal, type Queryable } from '../../engine/index.js';
import { holdsAnything, readSkippedRows } from './bad-records.js';
import { loadFile } from './load-file.js';
import { type ReaderAndEngine, type ReaderLoad, streamThroughReader } from './stream-load.js';

/**
 * The load of parsed rows into the table failed (not the parsing): some blocks may be in already,
 * so only reading the whole batch again into emptied stages is safe. Keeps the engine's code.
 */
export class StageLoadError extends EngineError {
  constructor(cause: EngineError) {
    super(cause.message, cause.code);
    this.name = 'StageLoadError';
  }
}

export interface SkippedRow {
  row: number;
  error: string;
  raw: string;
}

type Settings = Record<string, string | number | boolean>;

/**
 * Loads what a table function reads into a table of the service, isolating bad rows (README,
 * "Security"): the source reader, which may reach sources, parses and maps the records, and the
 * service's confined engine loads them (FROM INFILE, read by chDB's client side) into `into`.
 * Returns the rows loaded (as the source reader counted what it wrote: what it read, less what it
 * skipped) and the rows the engine skipped, numbered as the source counts them. `name` keeps the
 * scratch files of concurrent loads apart.
 *
 * Without `recheck` the rows stream from the reader to the engine through a FIFO
 * (stream-load.ts). With it (Kafka: a line that was not JSON at all changes the source and is
 * parsed anew), the skipped rows must be known before anything is loaded: the reader writes a
 * Native file in the service's scratch directory, `recheck` may answer 'again', and the engine
 * loads the file once it answers 'load'.
 */
export async function loadThroughReader(
  engines: ReaderAndEngine,
  load: ReaderLoad & { recheck?: (skipped: SkippedRow[]) => Promise<'load' | 'again'> },
): Promise<{ rows: number; skipped: SkippedRow[] }> {
  if (!load.recheck) {
    return streamThroughReader(
      engines,
      { ...load, insertSettings: insertSettingsOf(load) },
      (error) => new StageLoadError(error),
    );
  }
  const { engine, sourceReader } = engines;
  const { plan, settings } = load;
  // Uncompressed: compressing costs more time than the disk it saves (bench/object-storage.ts).
  const [rows, errors] = [`${load.name}.native`, `${load.name}.errors.csv`];
  try {
    let skipped: SkippedRow[];
    for (;;) {
      await Promise.all([engine.removeScratch(rows), engine.removeScratch(errors)]);
      await sourceReader.execute(
        `INSERT INTO FUNCTION file(${literal(engine.scratchPath(rows))}, 'Native') SELECT ${plan.namedSelectList} FROM ${load.from}`,
        {
          settings: {
            ...settings,
            input_format_allow_errors_ratio: 1,
            input_format_record_errors_file_path: engine.scratchPath(errors),
          },
        },
      );
      skipped = await readSkippedRows(sourceReader, engine.scratchPath(errors));
      if (skipped.length === 0 || !load.recheck || (await load.recheck(skipped)) === 'load') break;
    }
    // A source without a single record leaves no file behind, and one whose every record was
    // skipped an empty file, which the engine cannot read as Native.
    if (!(await holdsAnything(engine.scratchPath(rows)))) return { rows: 0, skipped };
    const blocks = insertSettingsOf(load);
    try {
      await loadFile(engine, {
        into: load.into,
        columnList: plan.columnList,
        path: engine.scratchPath(rows),
        format: 'Native',
        settings: blocks,
      });
    } catch (error) {
      throw error instanceof EngineError ? new StageLoadError(error) : error;
    }
    return { rows: await nativeRows(sourceReader, engine.scratchPath(rows)), skipped };
  } finally {
    await Promise.all([engine.removeScratch(rows), engine.removeScratch(errors)]);
  }
}

/**
 * The engine's settings for the insert: it reads as the source is (pread, blocks of bounded size),
 * so memory stays flat for any size, and the load's own insert settings.
 */
function insertSettingsOf(load: { settings: Settings; insertSettings?: Settings }): Settings {
  const { settings } = load;
  return {
    ...(settings.min_insert_block_size_bytes !== undefined
      ? { min_insert_block_size_bytes: settings.min_insert_block_size_bytes }
      : {}),
    ...(settings.storage_file_read_method !== undefined
      ? { storage_file_read_method: settings.storage_file_read_method }
      : {}),
    ...load.insertSettings,
  };
}

/** The rows of a Native file: the engine reads its blocks' headers only (about 15 ms for 1M rows). */
async function nativeRows(engine: Queryable, path: string): Promise<number> {
  const result = await engine.query(`SELECT count() AS n FROM file(${literal(path)}, 'Native')`);
  return Number(result.rows[0]?.n ?? 0);
}
