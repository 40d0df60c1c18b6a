import type { Logger } from 'pino';
import { sleep } from '../../../concurrency.js';
import { PermanentError, type RangeRead } from '../../records/index.js';
import type {
  Batch,
  Claim,
  Json,
  LimitsInFlight,
  ReportsLiveStatus,
  RunContext,
  SourceLag,
  SourceRun,
  TracksCommits,
} from '../contract.js';
import {
  batchLimits,
  ClaimedMessages,
  FirstMessages,
  flushDue,
  type MessagePlan,
  messagePlan,
  RecentWrites,
  type StreamFlush,
  streamFlush,
} from '../messages/index.js';
import type { BatchSink } from '../ports.js';
import { unsupportedKinesis } from './checks.js';
import { connectKinesis, type KinesisConnection, type KinesisSource } from './client.js';
import { PipeConsumer } from './consumer.js';
import { type KinesisCursor, type KinesisRange, startOf } from './cursor.js';
import { connectFanOut } from './fan-out.js';
import { PAGE } from './get-records.js';
import { readRangeAgain } from './read-again.js';
import { type KinesisMessage, kinesisMessages } from './records.js';
import type { FanOut, ShardHost } from './shard-host.js';
import { ShardReader } from './shard-reader.js';
import { listShards, type ShardInfo } from './shards.js';
import { ShardRates, shardStatuses, Troubles } from './status.js';
import type { KinesisStatus } from './status-shape.js';

/** How often the shard list is read for splits and merges (and at once when a shard ends). */
const SHARD_CHECK_MS = 10_000;

/** A batch's name for RecentWrites: where its shards' parts start (no two batches of a run share one). */
const writeKey = (range: KinesisRange) => range.parts.map((p) => `${p.shard}:${p.first}`).join(' ');

/**
 * Kinesis as a source (README, "How a Kinesis pipe runs"): one reader per open shard, each
 * shard owned by one of `scaling.replicas`; a replica's shards are claimed as one batch whose
 * range names, per shard, the first and last sequence numbers, so a crash reads exactly that
 * again (AT_SEQUENCE_NUMBER). A shard is in at most one batch at a time and a shard made by a
 * split or a merge starts only when its parents' records are all committed: per partition key,
 * records land in the order Kinesis holds them.
 */
export async function openKinesis(context: RunContext): Promise<SourceRun> {
  const source = context.config.source.kinesis as KinesisSource | undefined;
  if (!source) throw new PermanentError('SLUICE_ERR_SOURCE_CONFIG', 'the pipe has no kinesis source');
  const unsupported = unsupportedKinesis(source);
  if (unsupported) throw new PermanentError('SLUICE_ERR_UNSUPPORTED', unsupported.message);
  const connection = await connectKinesis(source, context.organizationId);
  const run = new KinesisRun(context, source, connection);
  try {
    await run.start();
  } catch (error) {
    await run.close();
    throw error;
  }
  return run;
}

class KinesisRun implements SourceRun, LimitsInFlight, ReportsLiveStatus, TracksCommits, ShardHost {
  firstCursor: Json | null = null;
  readonly pollMs = 100;
  readonly inFlight: number;
  readonly streamName: string;
  readonly signal: AbortSignal;
  readonly logger: Logger;
  readonly buffer: { rows: number; bytes: number };
  fanOut: FanOut | undefined;
  private readonly stopping = new AbortController();
  private readonly replicas: number;
  private readonly flush: StreamFlush;
  private readonly how: MessagePlan<KinesisMessage>;
  private readonly readers = new Map<string, ShardReader>();
  /** Messages of claimed batches not yet written, by range. */
  private readonly claimed: ClaimedMessages<KinesisMessage, KinesisRange>;
  private readonly troubles: Troubles;
  private readonly rates = new ShardRates();
  private cursor!: KinesisCursor;
  /** No cursor was stored: the pipe reads for the first time (LATEST means now). */
  private firstRun = false;
  private shards: ShardInfo[] = [];
  private failure: { error: unknown } | undefined;
  private turn = 0;
  /** Whether this run claimed a batch yet: the first flushes sooner (flushDue). */
  private claimedAny = false;
  /** Claim-to-commit times, so a batch is visible within the pipe's wait (flushDue). */
  private readonly writes = new RecentWrites();
  /** The run's first answer waits for its first records (the first batch's stages made meanwhile). */
  private readonly firstMessages = new FirstMessages();
  private watching: Promise<void> | undefined;
  private wakeWatch: () => void = () => {};

  constructor(
    private readonly context: RunContext,
    private readonly source: KinesisSource,
    readonly connection: KinesisConnection,
  ) {
    this.streamName = source.streamName;
    this.logger = context.logger.child({ pipeId: context.pipeId });
    this.claimed = new ClaimedMessages((range) => readRangeAgain(this, range), this.logger);
    this.signal = AbortSignal.any([context.signal, this.stopping.signal]);
    this.flush = streamFlush(context.config);
    this.buffer = { rows: this.flush.rows, bytes: this.flush.bytes };
    this.replicas = context.config.scaling.replicas ?? 1;
    // A replica's next batch can take the shards its last one did not hold.
    this.inFlight = 2 * this.replicas;
    this.how = messagePlan(context.config, source.format, kinesisMessages);
    this.troubles = new Troubles(context, this.logger);
  }

  async start(): Promise<void> {
    if (this.source.useEnhancedFanOut) await this.registerFanOut();
    const stored = (await this.context.progress.cursor()) as unknown as KinesisCursor | null;
    this.firstRun = !stored?.shards;
    this.cursor = stored?.shards ? stored : { startedAt: Date.now(), shards: {} };
    // A batch claimed before a restart holds its shards until it commits (it is read again first).
    for (const batch of await this.context.progress.openBatches()) {
      for (const part of (batch.range as unknown as KinesisRange).parts) this.holdFor(part.shard, 1);
    }
    if (this.firstRun) {
      const shards = await listShards(this.connection, this.streamName);
      this.cursor.firstShards = shards.map((shard) => shard.id);
      this.firstCursor = this.cursor as unknown as Json;
    }
    await this.followShards();
    // LATEST means the records that arrive once the pipe runs: each shard's tip is taken first.
    if (this.firstRun && this.source.iteratorType === 'LATEST')
      await Promise.all([...this.readers.values()].map((reader) => reader.positioned));
    this.watching = this.watchShards();
  }

  /** Enhanced fan-out: the pipe's consumer, registered (or found) and ACTIVE, and its HTTP/2 client. */
  private async registerFanOut(): Promise<void> {
    const connection = await connectFanOut(this.source, this.context.organizationId);
    try {
      const consumer = await PipeConsumer.register({
        connection: this.connection,
        streamName: this.streamName,
        pipeId: this.context.pipeId,
        signal: this.signal,
        logger: this.logger,
      });
      this.fanOut = { connection, consumer };
    } catch (error) {
      connection.close();
      throw error;
    }
  }

  /** Readers for the shards whose parents are done, each given to the replica with the fewest. */
  private async followShards(): Promise<void> {
    this.shards = await listShards(this.connection, this.streamName);
    const listed = new Set(this.shards.map((shard) => shard.id));
    for (const shard of this.shards) {
      if (this.readers.has(shard.id)) continue;
      const parentsDone = shard.parents.every(
        (parent) => !listed.has(parent) || this.readers.get(parent)?.drained,
      );
      if (!parentsDone) continue;
      const reader = new ShardReader(
        this,
        shard.id,
        this.leastBusyReplica(),
        startOf(this.source, this.cursor, shard.id, this.firstRun),
        this.cursor.shards[shard.id],
      );
      reader.inFlight = this.held.get(shard.id) ?? 0;
      this.readers.set(shard.id, reader);
      reader.run();
      this.logger.info({ shard: shard.id, replica: reader.replica }, 'reading a Kinesis shard');
    }
  }

  private readonly held = new Map<string, number>();

  private holdFor(shard: string, by: number): void {
    const reader = this.readers.get(shard);
    if (reader) reader.inFlight += by;
    else this.held.set(shard, (this.held.get(shard) ?? 0) + by);
  }

  private leastBusyReplica(): number {
    const load = new Array<number>(this.replicas).fill(0);
    for (const reader of this.readers.values())
      if (!reader.finished) load[reader.replica] = (load[reader.replica] ?? 0) + 1;
    return load.indexOf(Math.min(...load));
  }

  private async watchShards(): Promise<void> {
    while (!this.signal.aborted) {
      await new Promise<void>((resolve) => {
        this.wakeWatch = resolve;
        void sleep(SHARD_CHECK_MS, this.signal).then(resolve);
      });
      if (this.signal.aborted) break;
      try {
        await this.followShards();
      } catch (error) {
        // The readers meet the same trouble and report it; this asks again.
        if (!this.signal.aborted) this.logger.warn({ err: error }, "reading the stream's shards failed");
      }
    }
  }

  closed(shard: string): boolean {
    return this.shards.some((listed) => listed.id === shard && listed.closed);
  }

  trouble(shard: string, reason: string | undefined): void {
    this.troubles.set(shard, reason);
  }

  failed(error: unknown): void {
    if (!this.signal.aborted) this.failure ??= { error };
  }

  ended(shard: string): void {
    this.logger.info({ shard }, 'a Kinesis shard ended (split or merged)');
    this.wakeWatch();
  }

  arrived(): void {
    this.firstMessages.arrived();
  }

  /**
   * Until the run's first claim, each shard's GetRecords asks for its share of the first batch's
   * rows, not a whole page: on a backlog a page of 10,000 records per shard (up to 10 MB, and five
   * seconds of a shard's read allowance) is read before any of it can be the first batch, which
   * takes 10,000 rows of all the shards at most (messages/flush.ts).
   */
  pageLimit(): number {
    if (this.claimedAny) return PAGE;
    const open = Math.max(1, [...this.readers.values()].filter((reader) => !reader.finished).length);
    return Math.min(PAGE, Math.ceil(batchLimits(this.flush, true).rows / open));
  }

  async next(cursorJson: Json | null): Promise<Claim | 'idle'> {
    if (this.failure) throw this.failure.error;
    await this.firstMessages.firstAnswer(this.signal);
    await this.troubles.report();
    const cursor = (cursorJson as unknown as KinesisCursor | null) ?? this.cursor;
    for (let tried = 0; tried < this.replicas; tried += 1) {
      const replica = (this.turn + tried) % this.replicas;
      const ready = [...this.readers.values()].filter(
        (r) => r.replica === replica && r.inFlight === 0 && r.messages.length > 0,
      );
      const timing = { recentWriteMs: this.writes.longestMs, pollMs: this.pollMs };
      if (!flushDue(ready, this.flush, timing, !this.claimedAny)) continue;
      this.turn = (replica + 1) % this.replicas;
      const limits = batchLimits(this.flush, !this.claimedAny);
      this.claimedAny = true;
      const claim = this.claim(ready, cursor, limits);
      this.writes.claimed(writeKey(claim.range as unknown as KinesisRange));
      return claim;
    }
    return 'idle';
  }

  private claim(
    readers: ShardReader[],
    cursor: KinesisCursor,
    limits: { rows: number; bytes: number },
  ): Claim {
    const range: KinesisRange = { parts: [] };
    const payload: KinesisMessage[] = [];
    const shards = { ...cursor.shards };
    let [rows, bytes] = [0, 0];
    for (const reader of readers) {
      if (rows >= limits.rows || bytes >= limits.bytes) break;
      const taken = reader.take(limits.rows - rows, limits.bytes - bytes);
      if (taken.length === 0) continue;
      const [first, last] = [taken[0] as KinesisMessage, taken.at(-1) as KinesisMessage];
      range.parts.push({
        shard: reader.id,
        first: first.sequence,
        last: last.sequence,
        records: taken.length,
      });
      for (const message of taken) bytes += message.value.length;
      rows += taken.length;
      payload.push(...taken);
      reader.inFlight += 1;
      shards[reader.id] = last.sequence;
    }
    this.cursor = { ...cursor, shards };
    this.claimed.keep(range, payload);
    return {
      range: range as unknown as Json,
      files: 0,
      bytes,
      skipped: [],
      cursor: this.cursor as unknown as Json,
    };
  }

  read(batch: Batch, sink: BatchSink): Promise<RangeRead> {
    return this.claimed.load(
      batch.range as unknown as KinesisRange,
      sink,
      this.context.sourceReader,
      this.how,
      `${this.context.pipeId}-${batch.slot}`,
    );
  }

  async committed(batch: Batch): Promise<void> {
    this.writes.committed(writeKey(batch.range as unknown as KinesisRange));
    for (const part of (batch.range as unknown as KinesisRange).parts) {
      this.holdFor(part.shard, -1);
      const reader = this.readers.get(part.shard);
      if (reader) reader.committedTo = part.last;
      this.rates.add(part.shard, part.records);
      if (reader?.drained) this.wakeWatch();
    }
  }

  /** Milliseconds behind the stream's tip, per shard; the total is the shard furthest behind. */
  lag(): SourceLag | undefined {
    const parts: Record<string, number> = {};
    for (const shard of this.status().shards)
      if (shard.millisBehindLatest !== null) parts[shard.shardId] = shard.millisBehindLatest;
    const lags = Object.values(parts);
    return lags.length === 0 ? undefined : { total: Math.max(...lags), parts };
  }

  status(): KinesisStatus {
    return { shards: shardStatuses(this.shards, this.readers, this.troubles, this.rates) };
  }

  async close(): Promise<void> {
    this.stopping.abort();
    this.wakeWatch();
    await this.watching;
    await Promise.all([...this.readers.values()].map((reader) => reader.stopped()));
    this.connection.close();
    this.fanOut?.connection.close();
  }
}
