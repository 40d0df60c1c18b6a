import { EngineError, literal, TRANSIENT_SCRATCH_PREFIX } from '../../engine/index.js';
import { ReadAgainError } from './errors.js';
import { loadFile } from './load-file.js';
import type { ReaderAndEngine } from './stream-load.js';

type Settings = Record<string, string | number | boolean>;

/**
 * The bytes of source files the source reader may hold at once while it copies them (loadCopied):
 * the engine reads a file as RawBLOB whole, and held about three times its size at its peak
 * (121 MB of Parquet: 362 MB over the idle engine's 251 MB), about what it holds parsing such a
 * file into Native blocks itself. A file larger than this is parsed by the source reader.
 */
export const COPY_BUDGET_BYTES = 256 * 1024 * 1024;

/** A file copied as it is into the service's scratch space, which the service's engine loads itself. */
export interface CopyLoad {
  /** Keeps the scratch files of concurrent loads apart. */
  name: string;
  /** The part of the batch's range the file is, as the source names it (ReadAgainError). */
  key: string;
  /** What the source reader copies: a table function reading the file as one RawBLOB value. */
  from: string;
  /** The file's size as listed, held against COPY_BUDGET_BYTES while it is copied. */
  bytes: number;
  /** The format the service's engine reads the copy in, as the target's types (InsertPlan.textIsTarget). */
  format: 'Parquet';
  columnList: string;
  /** The pipe's read settings, for the engine's parse. */
  settings: Settings;
  into: string;
}

/** Whether a file of `bytes` may be copied (loadCopied) rather than parsed by the source reader. */
export function copyable(bytes: number): boolean {
  return bytes <= COPY_BUDGET_BYTES;
}

/**
 * A file the engine can read the source's bytes of itself (README, "How an object-storage pipe
 * runs"): the source reader copies the file as it is into the service's scratch space, where
 * only the service's engines see it, and the service's engine parses and loads that copy, reading
 * a columnar file's parts in parallel where it needs them (FROM INFILE on a seekable file). One
 * parse instead of two, and no Native stream between the engines: 10M rows of Parquet, 1.9 s
 * instead of 3.4-3.8 (bench/object-storage.ts). The rows are the copy's by its own metadata, counted
 * by the source reader. A count or load the engine refuses throws ReadAgainError (some of its rows
 * may be in the stage already); a copy that fails throws the source reader's error, as a parse of
 * the file there would.
 */
export async function loadCopied(engines: ReaderAndEngine, load: CopyLoad): Promise<{ rows: number }> {
  const { engine, sourceReader } = engines;
  // Transient: a copy a killed server left behind goes when the engine starts again (engine/chdb/scratch.ts).
  const copy = `${TRANSIENT_SCRATCH_PREFIX}copy-${load.name}.${load.format.toLowerCase()}`;
  const path = literal(engine.scratchPath(copy));
  try {
    await budgetOf(sourceReader).spend(load.bytes, () =>
      sourceReader.execute(`INSERT INTO FUNCTION file(${path}, 'RawBLOB') SELECT * FROM ${load.from}`, {
        settings: { engine_file_truncate_on_insert: 1 },
      }),
    );
    try {
      const counted = await sourceReader.query(
        `SELECT count() AS n FROM file(${path}, ${literal(load.format)})`,
      );
      await loadFile(engine, {
        into: load.into,
        columnList: load.columnList,
        path: engine.scratchPath(copy),
        format: load.format,
        settings: load.settings,
      });
      return { rows: Number(counted.rows[0]?.n ?? 0) };
    } catch (error) {
      throw error instanceof EngineError ? new ReadAgainError(load.key, { cause: error }) : error;
    }
  } finally {
    await engine.removeScratch(copy);
  }
}

/** Bytes of copies in flight on one source reader, at most COPY_BUDGET_BYTES; the others wait. */
export class CopyBudget {
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];

  async spend<T>(bytes: number, work: () => Promise<T>): Promise<T> {
    while (this.inFlight > 0 && this.inFlight + bytes > COPY_BUDGET_BYTES) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    this.inFlight += bytes;
    try {
      return await work();
    } finally {
      this.inFlight -= bytes;
      for (const wake of this.waiting.splice(0)) wake();
    }
  }
}

const budgets = new WeakMap<object, CopyBudget>();

function budgetOf(reader: object): CopyBudget {
  let budget = budgets.get(reader);
  if (!budget) {
    budget = new CopyBudget();
    budgets.set(reader, budget);
  }
  return budget;
}
