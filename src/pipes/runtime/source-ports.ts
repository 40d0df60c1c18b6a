import {
  countRows,
  countRowsOf,
  describeTable,
  type Engine,
  EngineError,
  expressionProblem,
  tableStorage,
} from '../../engine/index.js';
import {
  loadCopied,
  loadFile,
  loadThroughReader,
  type ProducingReader,
  spareTexts,
} from '../records/index.js';
import type { BatchSink, Scratch, TargetTables, TextLoad } from '../sources/index.js';

/**
 * The ports a source reaches the engines through (sources/ports.ts), made of the engines the
 * runtime holds: a source never holds an engine (docs/architecture.md, "The source contract").
 */

/** The service's tables, as a kind that manages the tables it writes reaches them. */
export function targetTablesOf(engine: Engine): TargetTables {
  let tables = targetTables.get(engine);
  if (!tables) {
    tables = {
      query: (sql, options) => engine.query(sql, options),
      execute: (sql, options) => engine.execute(sql, options),
      describe: (database, table) => describeTable(engine, database, table),
      countRows: (database, table) => countRows(engine, database, table),
      storage: (database, table) => tableStorage(engine, database, table),
      expressionProblem: (text) => expressionProblem(engine, text),
    };
    targetTables.set(engine, tables);
  }
  return tables;
}

/**
 * One port per engine, for as long as the engine is used: what is learnt of an engine through
 * its port (the data types it knows, src/engine/statement.ts) holds from one create to the next.
 */
const targetTables = new WeakMap<Engine, TargetTables>();

/** The service's scratch directory, which its source reader reads and writes too. */
export function scratchOf(engine: Engine): Scratch {
  return {
    path: (name) => engine.scratchPath(name),
    remove: (name) => engine.removeScratch(name),
    reuse: (name) => spareTexts.take(engine, name),
    keep: (name) => spareTexts.keep(engine, name),
  };
}

/**
 * A batch's sink: each load is parsed by the source reader and loaded by the service's engine
 * (records/load.ts) into the stage `into` names.
 */
export function batchSink(
  engines: { engine: Engine; sourceReader: ProducingReader },
  targets: BatchTargets,
  counted: StageCounts = new Map(),
): BatchSink {
  const { engine } = engines;
  return {
    scratch: scratchOf(engine),
    into: (table) => targets.into(table),
    load: ({ table, ...load }) => {
      const into = targets.into(table);
      counted.delete(into);
      return loadThroughReader(engines, { ...load, into });
    },
    loadText: (load) => loadTextInEngine(engine, targets, load, counted),
    loadCopy: ({ table, ...load }) => {
      const into = targets.into(table);
      counted.delete(into);
      return loadCopied(engines, { ...load, into });
    },
  };
}

/** Where a batch sink's loads go: each table's stage. */
type BatchTargets = { into(table?: string): string };

/**
 * The rows a stage held when a load of the batch last counted them (loadTextInEngine), by the
 * stage's name as `into` gives it; a load into the stage since forgets its count. The batch's
 * own count of its stages takes a count from here rather than asking the engine again
 * (runtime/batch.ts, stagedCounts).
 */
export type StageCounts = Map<string, number>;

/** BatchSink.loadText: the engine's own load of a text file into a stage, emptied again when refused. */
async function loadTextInEngine(
  engine: Engine,
  targets: BatchTargets,
  { table, file, rows, ...load }: TextLoad,
  counted: StageCounts,
): Promise<{ refused?: Error }> {
  // A load the engine refuses midway may have written blocks before the value it could not take:
  // the stage is emptied again (every table a pipe writes has one, a Null destination's too).
  const stage = targets.into(table);
  counted.delete(stage);
  let refused: Error | undefined;
  try {
    await loadFile(engine, { ...load, into: stage, path: engine.scratchPath(file) });
    if (rows !== undefined) {
      const staged = await countRowsOf(engine, stage);
      if (staged !== rows) refused = new Error(`the engine read ${staged} rows of the ${rows} written`);
      else counted.set(stage, staged);
    }
  } catch (error) {
    if (!(error instanceof EngineError)) throw error;
    refused = error;
  }
  if (refused) await engine.execute(`TRUNCATE TABLE ${stage}`);
  return refused ? { refused } : {};
}
