import { execFile } from 'node:child_process';
import { close, constants, open } from 'node:fs';
import { availableParallelism } from 'node:os';
import { promisify } from 'node:util';
import { type Engine, EngineError } from '../../engine/index.js';
import { readSkippedRows } from './bad-records.js';
import type { InsertPlan } from './insert-plan.js';
import type { SkippedRow } from './load.js';
import { loadFile } from './load-file.js';
import { ScratchSpares } from './scratch-spares.js';

const openFile = promisify(open);
const closeFile = promisify(close);
const run = promisify(execFile);

/**
 * The engine's loads of one stream, side by side, each from a FIFO of its own: one load's insert
 * reads, sorts and writes its parts on one thread, and fell behind the reader (README, "Benchmarks").
 */
export const LOAD_WAYS = 2;

type Settings = Record<string, string | number | boolean>;

/**
 * How a batch's text is parsed where the loads beside it take every core (a 2-core machine: the
 * service engine's LOAD_WAYS inserts of one stream, or a stream's batches in flight): on one thread.
 * Parallel parsing splits one file among threads and costs about a third more CPU for the split;
 * with no core to spare it only slowed the load (bench/object-storage.ts, 10M rows from file://:
 * NDJSON 2.97 -> 2.30 s, CSV 2.25 -> 1.65 s, the source reader's CPU a quarter less; bench/kafka.ts,
 * the engine's own load of JSON messages, src/pipes/sources/messages/json-load.ts). A load's own
 * settings still win (postgres/target/table-load.ts).
 */
export const PARSE_SETTINGS: Settings = coresTakenBy(LOAD_WAYS) ? { input_format_parallel_parsing: 0 } : {};

/** Whether this many loads side by side keep every core of the machine busy (PARSE_SETTINGS). */
export function coresTakenBy(loadsAtOnce: number): boolean {
  return loadsAtOnce >= availableParallelism();
}

/** How often a failed producer's FIFO is opened and closed again, until the engine's load ends. */
const UNBLOCK_POLL_MS = 10;

/** The source reader as a load streams from it: statements, and rows produced into a FIFO. */
export type ProducingReader = Pick<Engine, 'query' | 'execute' | 'produceInto' | 'warm'>;

/** The two engines of a load: the service's, and its source reader. */
export interface ReaderAndEngine {
  engine: Engine;
  sourceReader: ProducingReader;
}

/** A load through the source reader: what it reads and maps, and the table it goes into. */
export interface ReaderLoad {
  /** Keeps the scratch files of concurrent loads apart. */
  name: string;
  /** What the source reader reads: a table function. */
  from: string;
  plan: InsertPlan;
  /** The source reader's settings for the parse. */
  settings: Settings;
  into: string;
  /** Settings of the service engine's insert only (the parse has `settings`). */
  insertSettings?: Settings;
}

/**
 * The one-hop load (README, "How an object-storage pipe runs"): the source reader parses and maps
 * `from` and writes its rows as Native blocks into LOAD_WAYS FIFOs of the service's scratch space
 * while the service's confined engine loads them, an insert per FIFO side by side (FROM INFILE,
 * read on chDB's client side), so reading, parsing and loading overlap and no batch is written to
 * disk and read back. The rows are those the source reader wrote (its blocks' counts); the skipped
 * rows are its error file's. Either side failing ends the other: a load that fails before it
 * reads removes its FIFO, which the producer waiting for a reader takes as the end; a producer
 * that fails leaves every load an end of file. A failed load is the failure thrown
 * (`wrapLoadError`), once every load has ended: the producer then failed only because its reader
 * went away, since a producer that fails on its source writes whole blocks up to the end of file,
 * which the engine loads.
 */
export async function streamThroughReader(
  engines: ReaderAndEngine,
  load: ReaderLoad & { insertSettings: Settings },
  wrapLoadError: (error: EngineError) => Error,
): Promise<{ rows: number; skipped: SkippedRow[] }> {
  const { engine, sourceReader } = engines;
  const fifos = Array.from({ length: LOAD_WAYS }, (_, i) => `${load.name}.${i}.fifo`);
  const errors = `${load.name}.errors.csv`;
  const fifoPaths = fifos.map((fifo) => engine.scratchPath(fifo));
  await Promise.all([...fifos, errors].map((name) => engine.removeScratch(name)));
  const made = await Promise.allSettled(fifos.map((fifo) => makeFifo(engine, fifo)));
  let ended = false;
  try {
    for (const result of made) if (result.status === 'rejected') throw result.reason;
    const loadings = fifoPaths.map((path, i) => {
      const loading = loadFile(engine, {
        into: load.into,
        columnList: load.plan.columnList,
        path,
        format: 'Native',
        settings: load.insertSettings,
      });
      // A load that failed before it read: the producer waiting for it gives up.
      loading.catch(() => engine.removeScratch(fifos[i] as string));
      return loading;
    });
    const producing = sourceReader.produceInto(
      `SELECT ${load.plan.namedSelectList} FROM ${load.from}`,
      fifoPaths,
      {
        settings: {
          ...PARSE_SETTINGS,
          ...load.settings,
          input_format_allow_errors_ratio: 1,
          input_format_record_errors_file_path: engine.scratchPath(errors),
        },
      },
    );
    // Once the producer ended, well or not: a load it never wrote to (it failed before it opened
    // them, or that load waited for an engine connection all along) reads an end of file.
    const loaded = Promise.allSettled(loadings);
    const producedOrNot = Promise.allSettled([producing]);
    const ends = producedOrNot.then(() => Promise.all(fifoPaths.map((path) => endForReader(path, loaded))));
    const [loads, [produced]] = await Promise.all([loaded, producedOrNot]);
    await ends;
    const failedLoad = loads.find((result) => result.status === 'rejected');
    if (failedLoad) {
      const error = failedLoad.reason;
      throw error instanceof EngineError ? wrapLoadError(error) : error;
    }
    if (produced.status === 'rejected') throw produced.reason;
    const rows = produced.value;
    ended = true;
    return { rows, skipped: await readSkippedRows(sourceReader, engine.scratchPath(errors)) };
  } finally {
    await Promise.all([
      ...fifos.map((fifo) => (ended ? spareFifos.keep(engine, fifo) : engine.removeScratch(fifo))),
      engine.removeScratch(errors),
    ]);
  }
}

/**
 * The FIFOs of loads that ended well (both sides finished, so nothing holds them open and nothing
 * is left in them), for the next loads: making a FIFO runs `mkfifo` (Node has no call for it),
 * whose process costs Sluice about 10 ms of CPU on a large heap, per load. A FIFO of a failed load
 * is removed, never taken again.
 */
const spareFifos = new ScratchSpares('fifo', 8);

/** A FIFO at the scratch name `fifo`: a spare one renamed there, else a new one. */
async function makeFifo(engine: Engine, fifo: string): Promise<void> {
  if (await spareFifos.take(engine, fifo)) return;
  await run('mkfifo', ['-m', '600', engine.scratchPath(fifo)]);
}

/**
 * Opens the FIFO for writing and closes it again until `loaded` settles: a reader blocked in its
 * open (no writer came) then reads an end of file. Never blocks: a non-blocking open fails with
 * ENXIO while nobody reads, and ENOENT once the FIFO is gone.
 */
async function endForReader(path: string, loaded: Promise<unknown>): Promise<void> {
  let done = false;
  void loaded.then(() => {
    done = true;
  });
  while (!done) {
    try {
      await closeFile(await openFile(path, constants.O_WRONLY | constants.O_NONBLOCK));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    }
    await new Promise((resolve) => setTimeout(resolve, UNBLOCK_POLL_MS));
  }
}
