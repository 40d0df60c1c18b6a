import { sleep } from '../../../concurrency.js';
import { PermanentError } from '../../records/index.js';
import type {
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
  flushDue,
  RecentWrites,
  type StreamFlush,
  streamFlush,
} from '../messages/index.js';
import type { BatchSink } from '../ports.js';
import { connectionOptions, type KafkaConfig, topicNames, unsupportedKafka } from './connection.js';
import { coordinatorReady } from './coordinator.js';
import { kafkaFailure } from './errors.js';
import { readRange } from './fetch.js';
import { FirstBatch } from './first-batch.js';
import { Member, type MemberHost, PartitionState, partitionKey, splitPartitionKey } from './member.js';
import { kafkaMessagePlan } from './messages.js';
import type { KafkaRecord } from './record-batches.js';
import { EARLIEST, LATEST, requireTopics, startOffsets } from './start.js';
import type { KafkaStatus } from './status-shape.js';

/** A batch's range: per partition, the offsets [from, to) it holds (decimal strings in JSON). */
export interface KafkaRange {
  partitions: { topic: string; partition: number; from: string; to: string }[];
}

/** The cursor: per `topic:partition`, the offset after the last claimed message. */
type KafkaCursor = Record<string, string>;

const POLL_MS = 100;

/** A batch's name for RecentWrites: where its partitions start (no two batches of a run share one). */
const writeKey = (range: KafkaRange) =>
  range.partitions.map((p) => `${p.topic}:${p.partition}:${p.from}`).join(' ');
/** How often a run looks for partitions added to its topics. */
const PARTITION_CHECK_MS = 10_000;

/**
 * Kafka as a source: `scaling.replicas` members of the pipe's consumer group fetch the partitions
 * the group gives them; a member's partitions are claimed as one batch when they hold 100,000
 * messages, the byte budget, or have waited `streaming_max_insert_wait_ms`. The claim records each
 * partition's offset range before anything is written, so a crash reads exactly that range again
 * (by offset), and the store's cursor, not the group's offsets, says where each partition resumes.
 * Offsets are committed to the group too after each batch commits, for lag tools.
 */
export async function openKafka(context: RunContext): Promise<SourceRun> {
  const source = context.config.source.kafka;
  if (!source) throw new PermanentError('SLUICE_ERR_SOURCE_CONFIG', 'the pipe has no kafka source');
  const unsupported = unsupportedKafka(source);
  if (unsupported) throw new PermanentError('SLUICE_ERR_UNSUPPORTED', unsupported.message);
  const run = new KafkaRun(context, source);
  await run.start();
  return run;
}

class KafkaRun implements SourceRun, LimitsInFlight, ReportsLiveStatus, TracksCommits, MemberHost {
  readonly firstCursor: Json = {};
  readonly pollMs = POLL_MS;
  /** Until its first batch is visible (first-batch.ts). */
  private readonly firstBatch: FirstBatch;
  private readonly replicas: number;
  readonly topics: string[];
  readonly logger;
  private readonly stopping = new AbortController();
  readonly signal: AbortSignal;
  private readonly partitions = new Map<string, PartitionState>();
  private readonly members: Member[] = [];
  /** Messages of claimed batches not yet written, by range. */
  private readonly claimed: ClaimedMessages<KafkaRecord, KafkaRange>;
  private readonly flush: StreamFlush;
  private readonly how;
  private failure: { error: unknown } | undefined;
  private turn = 0;
  /** Claim-to-commit times, so a batch is visible within the pipe's wait (flushDue). */
  private readonly writes = new RecentWrites();
  private watching: Promise<void> | undefined;
  /** Each topic's partition count when the run started. */
  private firstCounts = new Map<string, number>();

  constructor(
    private readonly context: RunContext,
    private readonly source: KafkaConfig,
  ) {
    this.topics = topicNames(source);
    this.logger = context.logger.child({ pipeId: context.pipeId });
    this.claimed = new ClaimedMessages((range) => this.readAgain(range), this.logger);
    this.signal = AbortSignal.any([context.signal, this.stopping.signal]);
    this.flush = streamFlush(context.config);
    this.how = kafkaMessagePlan(context.config, context.allowPrivateSources);
    this.replicas = context.config.scaling.replicas ?? 1;
    // Three batches per member: parsing, loading and moving overlap (the engines run statements
    // side by side).
    this.firstBatch = new FirstBatch(this.flush, 3 * this.replicas);
  }

  get inFlight(): number {
    return this.firstBatch.inFlight(this.partitions.values());
  }

  async start(): Promise<void> {
    const connection = connectionOptions(this.source, this.context);
    const groupId = this.source.consumerGroup ?? `pipes-${this.context.pipeId}`;
    for (let index = 0; index < this.replicas; index += 1) {
      this.members.push(new Member(this, index, groupId, connection));
    }
    try {
      [this.firstCounts] = await Promise.all([
        this.partitionCounts(),
        coordinatorReady(connection, groupId, this.logger, this.signal),
      ]);
      await Promise.all(this.members.map((member) => member.join()));
    } catch (error) {
      await this.close();
      throw kafkaFailure(error);
    }
    this.watching = this.watchPartitionCounts();
  }

  private async partitionCounts(): Promise<Map<string, number>> {
    const metadata = await (this.members[0] as Member).consumer.metadata({
      topics: this.topics,
      forceUpdate: true,
    });
    return new Map(this.topics.map((topic) => [topic, metadata.topics.get(topic)?.partitionsCount ?? 0]));
  }

  /**
   * Partitions added to a topic reach no member until the group rebalances, and the group
   * protocol does not rebalance for them by itself: every PARTITION_CHECK_MS the topics' partition
   * counts are read, and when they grew the members join again, so the leader hands the new
   * partitions out (Kafka's Java consumer does the same from its metadata refresh).
   */
  private async watchPartitionCounts(): Promise<void> {
    let known = JSON.stringify([...this.firstCounts]);
    while (!this.signal.aborted) {
      await sleep(PARTITION_CHECK_MS, this.signal);
      if (this.signal.aborted) break;
      try {
        const counts = JSON.stringify([...(await this.partitionCounts())]);
        if (counts !== known) {
          this.logger.info(
            { partitions: JSON.parse(counts) },
            'kafka partitions changed: rejoining the group',
          );
          // The group's leader assigns from its own metadata: every member's is made fresh first.
          await Promise.all(
            this.members.map((member) =>
              member.consumer.metadata({ topics: this.topics, forceUpdate: true }),
            ),
          );
          await Promise.all(this.members.map((member) => member.rejoin()));
          known = counts;
        }
      } catch (error) {
        // The fetch loops meet the same broker trouble and report it; this check tries again.
        if (!this.signal.aborted)
          this.logger.warn({ err: error }, "reading the topics' partition counts failed");
      }
    }
  }

  /**
   * Partitions made after the run started hold only messages written since: they are read from
   * their start whatever offset.strategy says (from_latest must not skip what was written to a
   * new partition before the group handed it out).
   */
  private addedSinceStart(key: string): boolean {
    const [topic, partition] = splitPartitionKey(key);
    return partition >= (this.firstCounts.get(topic) ?? Number.POSITIVE_INFINITY);
  }

  fetchable(member: Member): PartitionState[] {
    const owned = [...this.partitions.values()].filter((p) => p.owner === member);
    const buffered = owned.reduce((sum, p) => sum + p.bytes, 0);
    const { bytes, rows } = this.fetchLimits();
    if (buffered >= bytes) return [];
    return owned.filter((p) => p.messages.length < rows);
  }

  fetchLimits(): { bytes: number; rows: number } {
    return this.firstBatch.fetchLimits(this.partitions.values());
  }

  async assigned(member: Member, assignments: { topic: string; partitions: number[] }[]): Promise<void> {
    const given = new Set(assignments.flatMap((a) => a.partitions.map((p) => partitionKey(a.topic, p))));
    for (const state of this.partitions.values()) {
      if (state.owner === member && !given.has(state.key)) state.owner = undefined;
    }
    const fresh = [...given].filter((key) => !this.partitions.has(key));
    for (const key of given) {
      const state = this.partitions.get(key);
      if (state) state.owner = member;
    }
    if (fresh.length === 0) return;
    const starts = await startOffsets(this.context, this.source, member.consumer, fresh, (key) =>
      this.addedSinceStart(key),
    );
    for (const [key, start] of starts) {
      if (this.partitions.has(key)) continue;
      const [topic, partition] = splitPartitionKey(key);
      const state = new PartitionState(topic, partition, start);
      state.owner = given.has(key) ? member : undefined;
      this.partitions.set(key, state);
    }
    this.logger.info({ member: member.index, partitions: [...given] }, 'kafka partitions assigned');
  }

  /**
   * Positions outside their partition's log: before its start (retention deleted messages the pipe
   * had not read) or after its end (the topic was deleted and made again). The pipe goes on from
   * the log's start and says so in its log and its lastError.
   */
  async outOfRange(member: Member, partitions: PartitionState[]): Promise<void> {
    await requireTopics(member.consumer, this.topics);
    const [starts, ends] = await Promise.all([
      member.consumer.listOffsets({ topics: this.topics, timestamp: EARLIEST }),
      member.consumer.listOffsets({ topics: this.topics, timestamp: LATEST }),
    ]);
    for (const state of partitions) {
      const start = starts.get(state.topic)?.[state.partition];
      const end = ends.get(state.topic)?.[state.partition];
      if (start === undefined || end === undefined) continue;
      if (state.position >= start && state.position <= end) continue;
      const message =
        state.position < start
          ? `${state.topic} partition ${state.partition}: messages ${state.position} to ${start - 1n} were deleted (retention) before the pipe read them; going on from ${start}`
          : `${state.topic} partition ${state.partition} ends at ${end}, before the pipe's position ${state.position} (was the topic made again?); reading it from ${start}`;
      this.logger.warn({ topic: state.topic, partition: state.partition }, message);
      await this.context.progress.report({ message, code: 'SLUICE_ERR_SOURCE_DATA_EXPIRED' });
      state.moveTo(start);
    }
  }

  fetched(): void {
    this.firstBatch.fetched();
  }

  failed(error: unknown): void {
    if (this.signal.aborted) return;
    this.failure ??= { error: kafkaFailure(error) };
  }

  async next(cursor: Json | null): Promise<Claim | 'idle'> {
    if (this.failure) throw this.failure.error;
    await this.firstBatch.firstAnswer(this.signal);
    for (let tried = 0; tried < this.members.length; tried += 1) {
      const member = this.members[(this.turn + tried) % this.members.length] as Member;
      const owned = [...this.partitions.values()].filter((p) => p.owner === member && p.messages.length > 0);
      const timing = { recentWriteMs: this.writes.longestMs, pollMs: this.pollMs };
      if (!flushDue(owned, this.flush, timing, !this.firstBatch.claimed)) continue;
      this.turn = (this.turn + tried + 1) % this.members.length;
      const limits = batchLimits(this.flush, !this.firstBatch.claimed);
      this.firstBatch.claimed = true;
      const claim = this.claim(owned, (cursor ?? {}) as KafkaCursor, limits);
      this.writes.claimed(writeKey(claim.range as unknown as KafkaRange));
      return claim;
    }
    return 'idle';
  }

  /** Takes the buffered messages of these partitions, up to the flush limits, as one range. */
  private claim(
    owned: PartitionState[],
    cursor: KafkaCursor,
    limits: { rows: number; bytes: number },
  ): Claim {
    const range: KafkaRange = { partitions: [] };
    const payload: KafkaRecord[] = [];
    const next: KafkaCursor = { ...cursor };
    let [rows, bytes] = [0, 0];
    for (const state of owned) {
      let [taken, takenBytes] = [0, 0];
      while (taken < state.messages.length && rows < limits.rows && bytes + takenBytes < limits.bytes) {
        const message = state.messages[taken] as KafkaRecord;
        payload.push(message);
        takenBytes += message.valueLength;
        rows += 1;
        taken += 1;
      }
      bytes += takenBytes;
      if (taken === 0) continue;
      const rest = state.messages.slice(taken);
      const last = state.messages[taken - 1]?.offset ?? state.claimedTo;
      const to = rest.length === 0 ? state.position : last + 1n;
      range.partitions.push({
        topic: state.topic,
        partition: state.partition,
        from: `${state.claimedTo}`,
        to: `${to}`,
      });
      state.claimedTo = to;
      state.messages = rest;
      state.bytes -= takenBytes;
      state.since = rest.length > 0 ? Date.now() : undefined;
      next[state.key] = `${to}`;
    }
    this.claimed.keep(range, payload);
    return { range: range as unknown as Json, files: 0, bytes, skipped: [], cursor: next };
  }

  read(batch: { range: Json; slot: number }, sink: BatchSink) {
    return this.claimed.load(
      batch.range as unknown as KafkaRange,
      sink,
      this.context.sourceReader,
      this.how,
      `${this.context.pipeId}-${batch.slot}`,
    );
  }

  /** A range claimed by an earlier run: its messages, read again by offset. */
  private async readAgain(range: KafkaRange): Promise<KafkaRecord[]> {
    const consumer = (this.members[0] as Member).consumer;
    this.logger.info({ range: range.partitions }, 'reading a range claimed before a restart again');
    const messages: KafkaRecord[] = [];
    for (const part of range.partitions) {
      const read = await readRange(
        consumer,
        this.topics,
        { topic: part.topic, partition: part.partition, from: BigInt(part.from), to: BigInt(part.to) },
        this.signal,
      );
      messages.push(...read);
      this.logger.debug({ ...part, messages: read.length }, 'read a claimed range again');
    }
    return messages;
  }

  /** After the store committed a batch: its offsets go to the group too, for lag tools. */
  async committed(batch: { range: Json }): Promise<void> {
    const range = batch.range as unknown as KafkaRange;
    this.firstBatch.committed = true;
    this.writes.committed(writeKey(range));
    const member = this.members[0];
    if (!member || range.partitions.length === 0) return;
    await member.consumer
      .commit({
        offsets: range.partitions.map((p) => ({
          topic: p.topic,
          partition: p.partition,
          offset: BigInt(p.to),
          leaderEpoch: -1,
        })),
      })
      .catch((error: unknown) => {
        // The store holds the truth; the group's offsets only inform lag tools.
        this.logger.warn({ err: error }, 'could not commit offsets to the consumer group');
      });
  }

  /** Per partition: where the pipe is, the end of the log, and the difference. */
  /** Messages after the last one claimed, per partition (`topic/partition`) and in all. */
  lag(): SourceLag | undefined {
    const parts: Record<string, number> = {};
    for (const p of this.status().partitions) if (p.lag !== null) parts[`${p.topic}/${p.partition}`] = p.lag;
    const lags = Object.values(parts);
    return lags.length === 0 ? undefined : { total: lags.reduce((a, b) => a + b, 0), parts };
  }

  status(): KafkaStatus {
    const known = (n: bigint) => (n < 0n ? null : Number(n));
    return {
      partitions: [...this.partitions.values()]
        .sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition)
        .map((p) => ({
          topic: p.topic,
          partition: p.partition,
          offset: Number(p.claimedTo),
          highWatermark: known(p.highWatermark),
          lag: p.highWatermark < 0n ? null : Math.max(0, Number(p.highWatermark - p.claimedTo)),
        })),
    };
  }

  async close(): Promise<void> {
    this.stopping.abort();
    await this.watching;
    await Promise.all(this.members.map((member) => member.close()));
  }
}
