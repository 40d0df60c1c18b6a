import type { Logger } from 'pino';
import type { Engine } from '../../engine/index.js';
import type { Problem } from '../../errors.js';
import type { Batch, Claim, Json, Store } from '../../store/index.js';
import type { PipeConfig } from '../model.js';
import type { BadRecord } from '../records/index.js';
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
  /** Starts reading a pipe's source; checks what must hold at every start (an address still public). */
  open(context: RunContext): Promise<SourceRun>;
}

/** What a connector reads with while a pipe runs. */
export interface SourceRun {
  /** Where a new pipe starts (the progress row's first cursor). */
  readonly firstCursor: Json | null;
  /** Batches it may have in flight at once; `scaling.replicas` when absent. */
  readonly inFlight?: number;
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
   * Returns the records it had to set aside; a part it cannot read at all throws
   * UnreadablePartError, and the runtime reads the batch again without that part.
   */
  read(batch: Batch, into: string): Promise<BadRecord[]>;
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

export interface SourceStatus {
  /** Rows and source bytes committed per second over the last minute, while the pipe runs. */
  rowsPerSecond?: number;
  bytesPerSecond?: number;
  partitions?: PartitionStatus[];
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
  logger: Logger;
  signal: AbortSignal;
  /** Takes the pipe's secrets out of a text (engine errors may quote their input). */
  redact(text: string): string;
}
