import type { TProperties } from '@sinclair/typebox';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { TableSpec } from '../../engine/index.js';
import type { ErrorCode, Problem } from '../../errors.js';
import type { Batch, Claim, Json } from '../../store/index.js';

/** The store's shapes a source reads and returns (its claims and cursors stay the runtime's). */
export type { Batch, Claim, Json };

import type { PipeLag } from '../history/index.js';
import type { PipeConfig } from '../model.js';
import type { RangeRead } from '../records/index.js';
import type { BatchSink, Scratch, SourceReader, TargetTables } from './ports.js';

/**
 * One kind of source, as the runtime sees it (README, "How a pipe runs"), in the stages every kind
 * goes through: its configuration is checked (`createProblems`), then opened to run (`open`). The
 * runtime owns the exactly-once protocol (claim a range in the store, stage it, mark it staged,
 * move partitions, commit); a connector only says what comes next and reads exactly a range it
 * said. What only some kinds do is a capability below, which a connector implements or not; the
 * runtime asks with the guards (`checksChanges(connector)`), never by the kind's name.
 */
export interface SourceConnector {
  /** The name of its kind (sources/kind.ts). */
  readonly kind: string;
  /** Columns every record of this kind offers besides its own fields, usable in fieldMappings. */
  readonly virtualColumns: readonly string[];
  /**
   * Create-time checks against the real source, beyond the schema's rules: reachable, credentials
   * accepted, the files or topics exist; with validateSamples, the first records parse as mapped.
   */
  createProblems(config: PipeConfig, context: CheckContext): Promise<Problem[]>;
  /** Starts reading a pipe's source; checks what must hold at every start (an address still public). */
  open(context: RunContext): Promise<SourceRun>;
}

/**
 * Checks of an existing pipe's changed source (PATCH), where its position must survive the change
 * (a database pipe moved to another address). Without it: `createProblems` of the new configuration.
 */
export interface ChecksChanges {
  changedProblems(before: PipeConfig, after: PipeConfig, context: ChangeContext): Promise<Problem[]>;
}

/** Holds something at the source for a pipe, given back when the pipe is deleted. */
export interface CleansUpOnDelete {
  /**
   * The pipe was deleted: gives back what the source holds for it (a database pipe's
   * replication slot and the publication Sluice made). Throws when the source cannot be reached
   * or refuses; the runtime tries again later (runtime/source-cleanups.ts).
   */
  deleted(config: PipeConfig, context: CleanupContext): Promise<void>;
}

/** Has something to say of a pipe that does not run (its pipes are asked while stopped or failed). */
export interface ReportsIdleStatus {
  /**
   * What the source says of a pipe that does not run, from its stored cursor (a database pipe:
   * its slot, whose lag grows while the pipe is stopped). Problems are logged, never thrown ({}).
   */
  idleStatus(config: PipeConfig, cursor: Json | null, context: CleanupContext): Promise<SourceStatus>;
}

/** Knows errors that waiting cannot fix, and says so before the runtime picks Degraded or Failed. */
export interface ExplainsRunFailure {
  /**
   * What the error that ended a run means: a connector may turn one that waiting cannot fix (a
   * database pipe's user refused a privilege) into a PermanentError that says what to do.
   * Without it: the error as it is.
   */
  runFailure(error: unknown, config: PipeConfig, context: CleanupContext): Promise<unknown>;
}

/**
 * The tables it writes come from its own configuration (a database pipe's table mappings), not
 * from the pipe's one `destination`: its `createProblems` checks them, and the runtime does not
 * check `destination` against the engine at create.
 */
export interface WritesItsOwnTables {
  readonly writesItsOwnTables: true;
}

/**
 * Its batches share the service's CDC capacity with the service's other pipes of such kinds
 * (pipesCdcScaling, runtime/cdc-capacity.ts): a batch holds a permit from before its claim to
 * its commit.
 */
export interface SharesCdcCapacity {
  readonly sharesCdcCapacity: true;
}

/** Adds parts of its own to a pipe's status, and metrics made of them. */
export interface ReportsStatus {
  readonly statusShape: StatusShape;
}

/**
 * The part of a pipe's status a kind adds (a stream's partitions), described once for the status
 * response, with the Prometheus gauges made of it.
 */
export interface StatusShape<Status extends SourceStatus = SourceStatus> {
  /**
   * Its fields of the status response (GET .../status), each optional: the response schema (and
   * so the OpenAPI document and the JSON written) is the runtime's fields and these.
   */
  readonly fields: TProperties;
  /**
   * Registers its gauges, filled at each scrape from `statuses`: those of every pipe, of any kind
   * (a kind reads only its own parts, absent from the others').
   */
  registerMetrics(registry: Registry, statuses: SourceStatuses<Partial<Status>>): void;
}

/** What the sources said, for the metrics, each with its pipe's id. */
export interface SourceStatuses<Status = SourceStatus> {
  /** What the sources of the pipes this node runs say now. */
  running(): [pipeId: string, status: Status][];
  /** What the sources of the pipes that do not run said last (a stopped database pipe's slot). */
  idle(): Promise<[pipeId: string, status: Status][]>;
}

export interface CleanupContext {
  pipeId: string;
  organizationId: string;
  allowPrivateSources: boolean;
  logger: Logger;
}

/**
 * What a connector reads with while a pipe runs. What only some sources do is a capability below
 * (`limitsInFlight(run)`).
 */
export interface SourceRun {
  /** Where a new pipe starts (the progress row's first cursor). */
  readonly firstCursor: Json | null;
  /** How long to wait before asking `next` again after it answered 'idle'. */
  readonly pollMs: number;
  /**
   * Claims what comes after `cursor`, or says there is nothing now: 'idle' (ask again later) or
   * 'complete' (a one-off source has nothing more, ever). The range is recorded before it is read.
   */
  next(cursor: Json | null): Promise<Claim | 'idle' | 'complete'>;
  /**
   * Reads exactly the batch's range, without its skipped parts, into `sink` (ports.ts), the same
   * records every time it is asked (after a crash a range is read again into an emptied stage).
   * Returns the rows it loaded, as it counted what it read (the runtime holds them against what
   * the engine staged), and the records it had to set aside; a part it cannot read at all throws
   * UnreadablePartError, and the runtime reads the batch again without that part. A source of
   * several tables names the table in each load and in each bad record.
   */
  read(batch: Batch, sink: BatchSink): Promise<RangeRead>;
  close(): Promise<void>;
}

/** Says how many batches it may have in flight at once. Without it: `scaling.replicas`. */
export interface LimitsInFlight {
  /** Asked before each claim. */
  readonly inFlight: number;
}

/**
 * Writes several tables, each beside its error table (a database pipe's table mappings): the
 * runtime makes them when absent and stages a batch for each. Without it: the pipe's one
 * destination.
 */
export interface WritesSeveralTables {
  /** May change between claims (a resync's fresh tables): the next batch goes to the new ones. */
  readonly tables: readonly WrittenTable[];
}

/** Moves the pipe through its own states (Setup, Snapshot, Running); without it the runtime does. */
export interface OwnsItsStates {
  readonly ownsState: true;
}

/**
 * Its run's first answer is never worth slot 0's stages made beside it (src/pipes/runtime/
 * early-stages.ts): object storage, whose listing that finds files is claimed at once (its batch
 * makes the stages) and whose listing that finds nothing needs none, however long it took on a
 * busy machine. Without it: the stages are made beside a first answer that takes over 50 ms.
 */
export interface NoStagesAhead {
  readonly noStagesAhead: true;
}

/** A one-off source that says why it is complete, for the pipe's state history. */
export interface ExplainsCompletion {
  readonly completion: string;
}

/** Says something of itself while it runs (Kafka: each partition's offset and lag). */
export interface ReportsLiveStatus {
  status(): SourceStatus;
}

/**
 * Says how far behind its source it is while it runs, for the pipe's history: Kafka in messages
 * (per partition), Kinesis in milliseconds (per shard; the total is the largest), PostgreSQL in
 * bytes of WAL its slot holds. Undefined while it does not know.
 */
export interface ReportsLag {
  lag(): SourceLag | undefined;
}

/** A source's lag: the total, and each partition's, shard's or table's where it has them. */
export type SourceLag = PipeLag;

/** Keeps bookkeeping of its own of what the store committed (a stream's consumer group). */
export interface TracksCommits {
  /** After the store committed a batch. */
  committed(batch: Batch): Promise<void>;
}

/** Whether a connector or a run has the method `name`: the guard of a capability that is one. */
function offersMethod(offerer: SourceConnector | SourceRun, name: string): boolean {
  return typeof (offerer as unknown as Record<string, unknown>)[name] === 'function';
}

export function checksChanges(connector: SourceConnector): connector is SourceConnector & ChecksChanges {
  return offersMethod(connector, 'changedProblems');
}

export function cleansUpOnDelete(
  connector: SourceConnector,
): connector is SourceConnector & CleansUpOnDelete {
  return offersMethod(connector, 'deleted');
}

export function reportsIdleStatus(
  connector: SourceConnector,
): connector is SourceConnector & ReportsIdleStatus {
  return offersMethod(connector, 'idleStatus');
}

export function explainsRunFailure(
  connector: SourceConnector,
): connector is SourceConnector & ExplainsRunFailure {
  return offersMethod(connector, 'runFailure');
}

export function writesItsOwnTables(
  connector: SourceConnector,
): connector is SourceConnector & WritesItsOwnTables {
  return (connector as Partial<WritesItsOwnTables>).writesItsOwnTables === true;
}

export function sharesCdcCapacity(
  connector: SourceConnector,
): connector is SourceConnector & SharesCdcCapacity {
  return (connector as Partial<SharesCdcCapacity>).sharesCdcCapacity === true;
}

export function reportsStatus(connector: SourceConnector): connector is SourceConnector & ReportsStatus {
  return (connector as Partial<ReportsStatus>).statusShape !== undefined;
}

export function limitsInFlight(run: SourceRun): run is SourceRun & LimitsInFlight {
  return 'inFlight' in run;
}

export function writesSeveralTables(run: SourceRun): run is SourceRun & WritesSeveralTables {
  return 'tables' in run;
}

export function wantsNoStagesAhead(run: SourceRun): run is SourceRun & NoStagesAhead {
  return 'noStagesAhead' in run;
}

export function ownsItsStates(run: SourceRun): run is SourceRun & OwnsItsStates {
  return (run as Partial<OwnsItsStates>).ownsState === true;
}

export function explainsCompletion(run: SourceRun): run is SourceRun & ExplainsCompletion {
  return 'completion' in run;
}

export function reportsLiveStatus(run: SourceRun): run is SourceRun & ReportsLiveStatus {
  return offersMethod(run, 'status');
}

export function reportsLag(run: SourceRun): run is SourceRun & ReportsLag {
  return offersMethod(run, 'lag');
}

export function tracksCommits(run: SourceRun): run is SourceRun & TracksCommits {
  return offersMethod(run, 'committed');
}

/**
 * What a source says of itself, joined into a pipe's status: the rates the runtime measured, and
 * the parts its kind adds (a stream's partitions), which its connector's StatusShape describes.
 */
export type SourceStatus = {
  /** Rows and source bytes committed per second over the last minute, while the pipe runs. */
  rowsPerSecond?: number;
  bytesPerSecond?: number;
  readonly [part: string]: unknown;
};

export interface CheckContext {
  /** The service's tables (ports.ts): a kind that writes tables it names checks them. */
  target: TargetTables;
  /** The engine that reads sources (ports.ts), and the scratch files it reads samples from. */
  sourceReader: SourceReader;
  scratch: Scratch;
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
  /** The engine that reads sources (ports.ts); the batches' own loads go through `read`'s sink. */
  sourceReader: SourceReader;
  /** The service's tables (ports.ts), for a kind that manages the tables it writes. */
  target: TargetTables;
  /** The pipe's progress, as far as a source may read and put it back (runtime/run-progress.ts). */
  progress: RunProgress;
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
  /**
   * Moves the pipe to a state when it is in one of `from`; false when it was not. A move to
   * Degraded records `code` beside the reason (lastErrorCode; SLUICE_ERR_SOURCE when not given).
   */
  setState(to: RunState, reason: string, from: string[], code?: ErrorCode): Promise<boolean>;
}

/**
 * What a running source may know and say of its pipe's progress. The runtime owns the store, the
 * claims and the commits (runtime/batch.ts); a source reads its cursor and its open batches when
 * it starts, and puts the cursor back where its own protocol needs it (a resync starting over,
 * table mappings that changed).
 */
export interface RunProgress {
  /** The stored cursor; null before the pipe's first claim. */
  cursor(): Promise<Json | null>;
  /** Batches claimed and not yet committed, in claim order: a restart finishes them first. */
  openBatches(): Promise<Batch[]>;
  /** Puts the cursor at `cursor` and forgets the open batches `forget` names (all when absent). */
  reset(cursor: Json, forget?: readonly number[]): Promise<void>;
  /** How many files were found and not claimed yet, for the status (filesPending). */
  setFilesPending(count: number): Promise<void>;
  /** Shows a problem on the pipe's status without a state change (lastError), or clears it (null). */
  report(problem: { message: string; code: ErrorCode } | null): Promise<void>;
}

/** A table a source writes; its bad records go beside `errorsOf` when given (a resync's fresh table). */
export type WrittenTable = TableSpec & { errorsOf?: string };

/** The states a pipe's run moves it to by itself. */
export type RunState = 'Setup' | 'Snapshot' | 'Running' | 'Degraded' | 'Completed';
