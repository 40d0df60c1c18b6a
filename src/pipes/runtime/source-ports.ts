import {
  countRows,
  describeTable,
  type Engine,
  expressionProblem,
  tableStorage,
} from '../../engine/index.js';
import { loadFile, loadThroughReader, type ProducingReader } from '../records/index.js';
import type { BatchSink, Scratch, TargetTables } from '../sources/index.js';

/**
 * The ports a source reaches the engines through (sources/ports.ts), made of the engines the
 * runtime holds: a source never holds an engine (docs/architecture.md, "The source contract").
 */

/** The service's tables, as a kind that manages the tables it writes reaches them. */
export function targetTablesOf(engine: Engine): TargetTables {
  return {
    query: (sql, options) => engine.query(sql, options),
    execute: (sql, options) => engine.execute(sql, options),
    describe: (database, table) => describeTable(engine, database, table),
    countRows: (database, table) => countRows(engine, database, table),
    storage: (database, table) => tableStorage(engine, database, table),
    expressionProblem: (text) => expressionProblem(engine, text),
  };
}

/** The service's scratch directory, which its source reader reads and writes too. */
export function scratchOf(engine: Engine): Scratch {
  return { path: (name) => engine.scratchPath(name), remove: (name) => engine.removeScratch(name) };
}

/**
 * A batch's sink: each load is parsed by the source reader and loaded by the service's engine
 * (records/load.ts) into the table `into` names (its stage, or a Null destination itself).
 */
export function batchSink(
  engines: { engine: Engine; sourceReader: ProducingReader },
  targets: { into(table?: string): string; staged(table?: string): boolean },
): BatchSink {
  const { engine } = engines;
  return {
    scratch: scratchOf(engine),
    into: (table) => targets.into(table),
    staged: (table) => targets.staged(table),
    load: ({ table, ...load }) => loadThroughReader(engines, { ...load, into: targets.into(table) }),
    loadText: ({ table, file, ...load }) =>
      loadFile(engine, {
        ...load,
        into: targets.into(table),
        path: engine.scratchPath(file),
        format: 'TabSeparated',
      }),
  };
}
