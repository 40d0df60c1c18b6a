import type { Logger } from 'pino';
import { sleep } from '../../../concurrency.js';
import type { ConnectionOptions } from './connection.js';
import { brokerSaid } from './errors.js';
import { type FetchWant, fetchOnce } from './fetch.js';
import { RawFetchConsumer } from './raw-fetch.js';
import type { KafkaRecord } from './record-batches.js';

export type KafkaConsumer = RawFetchConsumer;

/** What a pipe knows of one partition while it runs; it outlives a rebalance between members. */
export class PartitionState {
  owner: Member | undefined;
  /** The next offset to fetch. */
  position: bigint;
  /** Fetched and not yet claimed, in offset order. */
  messages: KafkaRecord[] = [];
  bytes = 0;
  /** When the oldest unclaimed message arrived (ms), for the flush by time. */
  since: number | undefined;
  highWatermark = -1n;

  constructor(
    readonly topic: string,
    readonly partition: number,
    /** Where the next claim starts: everything before it is claimed (the store's cursor). */
    public claimedTo: bigint,
  ) {
    this.position = claimedTo;
  }

  get key(): string {
    return partitionKey(this.topic, this.partition);
  }

  /**
   * The log holds more messages not fetched yet than are held: a backlog, whose batches take the
   * whole wait (flush.ts). A few appended while a fetch was answered are not one.
   */
  get behind(): boolean {
    return this.highWatermark - this.position > BigInt(this.messages.length);
  }

  /** Goes on from `offset`: what was fetched and not claimed is dropped. */
  moveTo(offset: bigint): void {
    this.messages = [];
    this.bytes = 0;
    this.since = undefined;
    this.position = offset;
    this.claimedTo = offset;
  }

  add(messages: KafkaRecord[], next: bigint, highWatermark: bigint): void {
    for (const message of messages) this.bytes += message.valueLength;
    if (messages.length > 0) {
      this.messages.push(...messages);
      this.since ??= Date.now();
    }
    if (next > this.position) this.position = next;
    this.highWatermark = highWatermark;
  }
}

export const partitionKey = (topic: string, partition: number) => `${topic}:${partition}`;

export function splitPartitionKey(key: string): [topic: string, partition: number] {
  const at = key.lastIndexOf(':');
  return [key.slice(0, at), Number(key.slice(at + 1))];
}

export interface MemberHost {
  readonly topics: string[];
  readonly logger: Logger;
  readonly signal: AbortSignal;
  /** The partitions a member may fetch now (owned, with room under the memory budget). */
  fetchable(member: Member): PartitionState[];
  /** The most a member holds of messages before it stops fetching; a fetch asks for no more bytes. */
  fetchLimits(): { bytes: number };
  /** The group gave this member these partitions (after a join or a rebalance). */
  assigned(member: Member, assignments: { topic: string; partitions: number[] }[]): Promise<void>;
  /** A position is outside its partition's log now: the host moves it where the log is. */
  outOfRange(member: Member, partitions: PartitionState[]): Promise<void>;
  /** A fetch brought messages into the partitions' buffers. */
  fetched(): void;
  /** A fetch failed for good (the client's own retries spent): the run stops with it. */
  failed(error: unknown): void;
}

const IDLE_MS = 100;

/**
 * One of a pipe's `scaling.replicas` consumers in its consumer group: the group protocol spreads
 * the partitions over the members, and each fetches its own into the partitions' buffers.
 */
export class Member {
  readonly consumer: KafkaConsumer;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly host: MemberHost,
    readonly index: number,
    groupId: string,
    connection: ConnectionOptions,
  ) {
    this.consumer = new RawFetchConsumer({
      ...connection,
      clientId: `sluice-${groupId}-${index}`,
      groupId,
      // A member of a killed process is dropped from the group this long after (the broker's
      // least): the restarted process gets its partitions a few seconds after it joins.
      sessionTimeout: 6_000,
      rebalanceTimeout: 6_000,
      heartbeatInterval: 1_000,
      autocommit: false,
    });
    // The client emits 'error' when it gives up rejoining its group after a failed heartbeat, also
    // while the run closes (its connection pool closed under a rejoin in flight). An 'error' event
    // nobody listens to would end the whole process: the run stops with it instead.
    this.consumer.on('error', (error: unknown) => {
      if (host.signal.aborted) {
        host.logger.debug({ err: error }, 'a closing Kafka consumer reported an error');
        return;
      }
      host.logger.warn({ err: error }, 'the Kafka consumer lost its group');
      host.failed(error);
    });
  }

  async join(): Promise<void> {
    this.consumer.topics.trackAll(...this.host.topics);
    this.consumer.on('consumer:group:join', () => {
      this.host.assigned(this, this.consumer.assignments ?? []).catch((error) => this.host.failed(error));
    });
    // Each join (the first and every rebalance) hands out partitions through the event above.
    await this.consumer.joinGroup({});
    this.loop = this.fetchLoop().catch((error) => this.host.failed(error));
  }

  /** Joins again (a rebalance): the group's leader assigns from the topics' metadata anew. */
  async rejoin(): Promise<void> {
    await this.consumer.joinGroup({});
  }

  private async fetchLoop(): Promise<void> {
    while (!this.host.signal.aborted) {
      const partitions = this.host.fetchable(this);
      if (partitions.length === 0) {
        await sleep(IDLE_MS, this.host.signal);
        continue;
      }
      const wants: FetchWant[] = partitions.map((p) => ({
        topic: p.topic,
        partition: p.partition,
        offset: p.position,
      }));
      let answers: Awaited<ReturnType<typeof fetchOnce>>;
      try {
        answers = await fetchOnce(this.consumer, this.host.topics, wants, this.host.fetchLimits().bytes);
      } catch (error) {
        if (!brokerSaid(error, 'OFFSET_OUT_OF_RANGE')) throw error;
        await this.host.outOfRange(this, partitions);
        continue;
      }
      for (const answer of answers) {
        const state = partitions.find((p) => p.topic === answer.topic && p.partition === answer.partition);
        const asked = wants.find((w) => w.topic === answer.topic && w.partition === answer.partition);
        // Moved to another member meanwhile, or read from elsewhere since: the answer is stale.
        if (!state || !asked || state.owner !== this || state.position !== asked.offset) continue;
        state.add(answer.messages, answer.next, answer.highWatermark);
        if (answer.messages.length > 0) this.host.fetched();
      }
    }
  }

  async close(): Promise<void> {
    await this.loop;
    try {
      await this.consumer.close();
    } catch (error) {
      this.host.logger.warn({ err: error }, 'a Kafka consumer did not close cleanly');
    }
  }
}
