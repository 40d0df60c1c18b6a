import type { Logger } from 'pino';
import type { Engine, TableSpec } from '../../engine/index.js';
import type { Problem } from '../../errors.js';
import type { Batch, Claim, Json, Store } from '../../store/index.js';
import type { PipeConfig } from '../model.js';
import type { RangeRead } from '../records/index.js';
import type { SourceKind } from '../schema/enums.js';

/**
 * One kind of source, as the runtime sees it (README, "How a pipe runs"). The runtime owns the
 * exactly-once protocol (claim a range in the store, stage it, mark it staged, move partitions,
 * commit); a connector only says what comes next and reads exactly a range it said.
 */
export interface SourceConnector {
  readonly kind: SourceKind;
  /** Columns every record of this kind offers besides its own fields, usable in fieldMappings. */
  readonly virtualColumns: readonly string[];
  /**
   * Create-time checks against the real source, beyond the schema's rules: reachable, credentials
   * accepted, the files or topics exist; with validateSamples, the first records parse as mapped.
   */
  createProblems(config: PipeConfig, context: CheckContext): Promise<Problem[]>;
  /**
   * Checks of an existing pipe's changed source (PATCH), where its position must survive the change
   * (a database pipe moved to another address). Absent: `createProblems` of the new configuration.
   */
  changedProblems?(before: PipeConfig, after: PipeConfig, context: ChangeContext): Promise<Problem[]>;
  /** Starts reading a pipe's source; checks what must hold at every start (an address still public). */
  open(context: RunContext): Promise<SourceRun>;
  /**
   * The pipe was deleted: gives back what the source holds for it (a database pipe's
   * replication slot and the publication Sluice made). Throws when the source cannot be reached
   * or refuses; the runtime tries again later (runtime/source-cleanups.ts).
   */
  deleted?(config: PipeConfig, context: CleanupContext): Promise<void>;
  /**
   * What the source says of a pipe that does not run, from its stored cursor (a database pipe:
   * its slot, whose lag grows while the pipe is stopped). Problems are logged, never thrown ({}).
   */
  idleStatus?(config: PipeConfig, cursor: Json | null, context: CleanupContext): Promise<SourceStatus>;
  /**
   * What the error that ended a run means, before the runtime picks `Degraded` (try again) or
   * `Failed`: a connector may turn one that waiting cannot fix (a database pipe's user refused a
   * privilege) into a PermanentError that says what to do. Absent: the error as it is.
   */
  runFailure?(error: unknown, config: PipeConfig, context: CleanupContext): Promise<unknown>;
}

export interface CleanupContext {
  pipeId: string;
  organizationId: string;
  allowPrivateSources: boolean;
  logger: Logger;
}

/** What a connector reads with while a pipe runs. */
export interface SourceRun {
  /** Where a new pipe starts (the progress row's first cursor). */
  readonly firstCursor: Json | null;
  /** Batches it may have in flight at once, asked before each claim; `scaling.replicas` when absent. */
  readonly inFlight?: number;
  /**
   * The tables this source writes, each beside its error table, when it writes several (a
   * database pipe's table mappings): the runtime makes them when absent and stages a batch for
   * each. Absent: the pipe's one destination.
   */
  readonly tables?: readonly WrittenTable[];
  /** The source moves the pipe through its own states (Setup, Snapshot, Running), not the runtime. */
  readonly ownsState?: boolean;
  /** Why a one-off source is complete, for the pipe's state history. */
  readonly completion?: string;
  /** How long to wait before asking `next` again after it answered 'idle'. */
  readonly pollMs: number;
  /**
   * Claims what comes after `cursor`, or says there is nothing now: 'idle' (ask again later) or
   * 'complete' (a one-off source has nothing more, ever). The range is recorded before it is read.
   */
  next(cursor: Json | null): Promise<Claim | 'idle' | 'complete'>;
  /**
   * Reads exactly the batch's range, without its skipped parts, into the table `into`, the same
   * records every time it is asked (after a crash a range is read again into an emptied stage).
   * Returns the rows it loaded, as it counted what it read (the runtime holds them against what
   * the engine staged), and the records it had to set aside; a part it cannot read at all throws
   * UnreadablePartError, and the runtime reads the batch again without that part. A source of
   * several tables writes each table's records into `intoTable(table)` and names the table in
   * each bad record. `staged(table)` says whether that table is the batch's own staging table,
   * emptied before each read (a source may then set it up for its load), or the destination
   * itself (a Null table, whose rows only its materialized views see).
   */
  read(
    batch: Batch,
    into: string,
    intoTable: (table: string) => string,
    staged: (table: string) => boolean,
  ): Promise<RangeRead>;
  /** What the source says of itself while it runs (Kafka: each partition's offset and lag). */
  status?(): SourceStatus;
  /** After the store committed a batch (a stream tells its own bookkeeping, like Kafka's group). */
  committed?(batch: Batch): Promise<void>;
  close(): Promise<void>;
}

/** A stream's position per partition: the next offset to claim, the end of the log, the gap. */
export interface PartitionStatus {
  topic: string;
  partition: number;
  offset: number;
  highWatermark: number | null;
  lag: number | null;
}

/** A database pipe's replication: where the stream and the slot are. */
export interface ReplicationStatus {
  phase: 'snapshot' | 'changes';
  slot: string | null;
  publication: string | null;
  lastReceivedLsn: string | null;
  lastCommittedLsn: string | null;
  /** WAL the server keeps for the slot: its current position past the slot's confirmed one. */
  slotLagBytes: number | null;
  /** Whether the server keeps the WAL the slot needs: `unreserved` loses it soon, `lost` has (setup.ts). */
  slotWalStatus: 'reserved' | 'extended' | 'unreserved' | 'lost' | null;
  changesPerSecond: number;
}

/** One table of a database pipe: its snapshot's progress and its rows. */
export interface TableStatus {
  table: string;
  source: string;
  snapshot: 'copying' | 'done';
  snapshotRanges?: number;
  snapshotRangesDone?: number;
  estimatedRows?: number;
  snapshotRowsThisRun: number;
  /** The target's live rows (FINAL, without deleted ones), counted in the background at `rowsCountedAt`. */
  rows?: number;
  rowsCountedAt?: string;
}

/** One shard of a Kinesis stream: who reads it, where it is, how far behind. */
export interface ShardStatus {
  shardId: string;
  /** The shards it was split or merged from: it is read once they are finished. */
  parents: string[];
  state: 'waiting for its parents' | 'reading' | 'finished';
  /** The replica that reads it (of `scaling.replicas`). */
  replica: number | null;
  lastCommittedSequenceNumber: string | null;
  millisBehindLatest: number | null;
  recordsPerSecond: number;
  /** Why it cannot be read now (throttled, unreachable), while its reader retries. */
  trouble?: string;
}

export interface SourceStatus {
  /** Rows and source bytes committed per second over the last minute, while the pipe runs. */
  rowsPerSecond?: number;
  bytesPerSecond?: number;
  partitions?: PartitionStatus[];
  shards?: ShardStatus[];
  replication?: ReplicationStatus;
  tables?: TableStatus[];
}

export interface CheckContext {
  /** The service's engine: confined, it reaches nothing outside the service. */
  service: Engine;
  /** The engine that reads sources (EngineRegistry.sourceReader). */
  sourceReader: Engine;
  localFilesDir: string;
  validateSamples: boolean;
  allowPrivateSources: boolean;
  /** Kafka brokers may be reached without TLS (SLUICE_ALLOW_PLAINTEXT_KAFKA). */
  allowPlaintextKafka: boolean;
  /** This node's AWS region (MSK IAM tokens where the brokers' names do not say it). */
  awsRegion: string | undefined;
  organizationId: string;
  /** Where a check reports what it cannot act on (a client that did not close). */
  logger?: Logger;
}

/** What checks of a changed source know beyond a create's: the pipe and where it is. */
export interface ChangeContext extends CheckContext {
  pipeId: string;
  /** The pipe's stored position (the progress row's cursor); null before it first ran. */
  cursor: Json | null;
}

export interface RunContext {
  pipeId: string;
  config: PipeConfig;
  engine: Engine;
  sourceReader: Engine;
  store: Store;
  localFilesDir: string;
  allowPrivateSources: boolean;
  allowPlaintextKafka: boolean;
  /** This node's AWS region (MSK IAM tokens where the brokers' names do not say it). */
  awsRegion: string | undefined;
  organizationId: string;
  /** The pipe's state as its worker started (a database pipe starts over after `Resync`). */
  startedIn: string;
  logger: Logger;
  signal: AbortSignal;
  /** Takes the pipe's secrets out of a text (engine errors may quote their input). */
  redact(text: string): string;
  /** Moves the pipe to a state when it is in one of `from`; false when it was not. */
  setState(to: RunState, reason: string, from: string[]): Promise<boolean>;
}

/** A table a source writes; its bad records go beside `errorsOf` when given (a resync's fresh table). */
export type WrittenTable = TableSpec & { errorsOf?: string };

/** The states a pipe's run moves it to by itself. */
export type RunState = 'Setup' | 'Snapshot' | 'Running' | 'Degraded' | 'Completed';
