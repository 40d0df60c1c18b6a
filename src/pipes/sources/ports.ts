import type { EngineColumn, Queryable, TableStorage } from '../../engine/index.js';
import type { CopyLoad, InsertPlan, SkippedRow } from '../records/index.js';

// What a source reaches the engines through (docs/architecture.md, "The source contract"). The
// runtime holds the engines and hands a source these ports, never an engine itself: a source
// produces, the runtime loads (runtime/batch-sink.ts, runtime/source-ports.ts).

/** What the engines throw through the ports, for a source that tells their errors apart. */
export { EngineError, isBadDataEngineError } from '../../engine/index.js';

/**
 * The sandboxed engine that reads sources (README, "Security"): it reaches the source and the
 * scratch files, never the service's tables. A source parses, samples and infers with it.
 */
export type SourceReader = Queryable;

/**
 * Files of the service's scratch space that the source reader reads and the runtime loads from
 * (a stream's messages, a database's rows in COPY's text): a source writes `path(name)` and names
 * it in what it reads, and removes it when done, or keeps a batch's text for the next (`keep`).
 */
export interface Scratch {
  path(name: string): string;
  remove(name: string): Promise<void>;
  /**
   * Gives `name` the text file of an earlier batch (`keep`) when there is one: true then, and its
   * old text is to be written over from its start and cut after the new (records, writeWhole). Its
   * pages are in memory already, where a new file's are new memory (records/scratch-text.ts).
   */
  reuse(name: string): Promise<boolean>;
  /** Done with the text file `name`, which nothing holds open: kept for a later `reuse`, or removed. */
  keep(name: string): Promise<void>;
}

/**
 * The service's tables, for a kind that manages the tables it writes (WritesItsOwnTables: a
 * database pipe follows its source's columns, applies a truncate, swaps a resync's tables in).
 * Statements run as Sluice's own on the service's confined engine.
 */
export interface TargetTables extends Queryable {
  /** A table's columns, or undefined when it does not exist. */
  describe(database: string, table: string): Promise<EngineColumn[] | undefined>;
  countRows(database: string, table: string): Promise<number>;
  /** A table's engine and the clauses of its definition, or undefined when it does not exist. */
  storage(database: string, table: string): Promise<TableStorage | undefined>;
  /** Why the engine would refuse `text` as an expression of a table's definition; undefined when it takes it. */
  expressionProblem(text: string): Promise<string | undefined>;
}

type Settings = Record<string, string | number | boolean>;

/** What a source hands the sink to load: records the source reader reads, parses and maps. */
export interface SinkLoad {
  /** Keeps the scratch files of concurrent loads apart. */
  name: string;
  /** What the source reader reads: a table function over the source or over a scratch file. */
  from: string;
  plan: InsertPlan;
  /** The source reader's settings for the parse. */
  settings: Settings;
  /** One of a source's several tables (WritesSeveralTables); the pipe's destination when absent. */
  table?: string;
  /** Settings of the service engine's insert only. */
  insertSettings?: Settings;
  /**
   * Asked when rows were skipped, before anything is loaded: may change the scratch file and
   * answer 'again' to have it parsed anew (a stream's line that was not JSON at all).
   */
  recheck?: (skipped: SkippedRow[]) => Promise<'load' | 'again'>;
}

/** A scratch file of text the service's engine loads itself (BatchSink.loadText). */
export interface TextLoad {
  table?: string;
  columnList: string;
  file: string;
  format: 'TabSeparated' | 'JSONEachRow';
  settings: Settings;
  /** The rows the file holds by its writer's count, which the stage must then hold. */
  rows?: number;
}

/**
 * Where a batch's records go (runtime/batch-sink.ts): the batch's staging tables, emptied before
 * each read, or a Null destination itself. The runtime loads; the source says what to load and
 * gives back what it set aside (RangeRead's bad records).
 */
export interface BatchSink {
  readonly scratch: Scratch;
  /**
   * The source reader parses and maps `load.from` and the service's engine loads the result into
   * the table: the rows loaded (as the source reader counted them) and the rows it skipped,
   * numbered as the source counts them.
   */
  load(load: SinkLoad): Promise<{ rows: number; skipped: SkippedRow[] }>;
  /**
   * The service's engine loads a scratch file itself, in a text format it reads as the target's
   * types (a database's rows when every column's text is the target's, a stream's JSON messages
   * when every mapped field is its column), into `table`'s stage, which must be empty and staged.
   * When the engine refuses the file (a value it cannot take: it sets no row aside), or `rows` is
   * given and the stage then holds another count, the stage is emptied again and `refused` says
   * why: the caller reads the file through the source reader (`load`), which sets such rows aside.
   */
  loadText(load: TextLoad): Promise<{ refused?: Error }>;
  /**
   * The source reader copies a source file as it is into the scratch space and the service's
   * engine loads the copy itself into `table` (records/copy-load.ts): the rows, by the file's own
   * count. A copy the engine refuses throws ReadAgainError, after which rows of it may be in the
   * stage: the runtime reads the batch again, and the source reads the file through the source
   * reader then.
   */
  loadCopy(load: Omit<CopyLoad, 'into'> & { table?: string }): Promise<{ rows: number }>;
  /** The name of the stage `table`'s records go into (every table a pipe writes has one). */
  into(table?: string): string;
}
