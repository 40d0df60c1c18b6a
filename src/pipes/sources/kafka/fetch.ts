import type { Consumer } from '@platformatic/kafka';
import { CodedError } from '../../../errors.js';
import { brokerSaid } from './errors.js';

/** One message as a batch keeps it: the bytes as they came, never parsed here. */
export interface KafkaMessage {
  offset: bigint;
  timestamp: bigint;
  key: Buffer | null;
  value: Buffer | null;
  headers: [Buffer, Buffer][];
}

export interface FetchWant {
  topic: string;
  partition: number;
  offset: bigint;
}

export interface Fetched {
  topic: string;
  partition: number;
  /** Offsets from the wanted one, in order; control records (transaction markers) left out. */
  messages: KafkaMessage[];
  /** Where the next fetch starts: after the last batch, control batches included. */
  next: bigint;
  highWatermark: bigint;
}

/** Record batch attributes: bit 4 transactional, bit 5 control (commit and abort markers). */
const TRANSACTIONAL_BATCH = 0x10;
const CONTROL_BATCH = 0x20;
/** A control record's key: int16 version, int16 type (0 abort, 1 commit). */
const ABORT_MARKER = 0;
const FETCH = { maxWaitMs: 500, partitionMaxBytes: 4 * 1024 * 1024, maxBytes: 16 * 1024 * 1024 };

type AnyConsumer = Consumer<Buffer, Buffer, Buffer, Buffer>;

/**
 * One round of Fetch requests, one per partition leader, for the wanted offsets. Whole record
 * batches come back as the broker sent them (no object per message beyond the client's own), which
 * is what lets a pipe read at the broker's speed (test/support/kafka/CLIENT-CHOICE.md).
 */
export async function fetchOnce(consumer: AnyConsumer, topics: string[], wants: FetchWant[]) {
  const metadata = await consumer.metadata({ topics });
  const byLeader = new Map<number, FetchWant[]>();
  for (const want of wants) {
    const leader = metadata.topics.get(want.topic)?.partitions[want.partition]?.leader;
    if (leader === undefined || leader < 0) continue;
    byLeader.set(leader, [...(byLeader.get(leader) ?? []), want]);
  }
  const answers = await Promise.all(
    [...byLeader].map(([node, list]) => fetchFrom(consumer, metadata, node, list)),
  );
  return answers.flat();
}

async function fetchFrom(
  consumer: AnyConsumer,
  metadata: Awaited<ReturnType<AnyConsumer['metadata']>>,
  node: number,
  wants: FetchWant[],
): Promise<Fetched[]> {
  const topicNames = new Map<string, string>();
  const requests = new Map<string, { partition: number; fetchOffset: bigint }[]>();
  for (const want of wants) {
    const id = metadata.topics.get(want.topic)?.id ?? '';
    topicNames.set(id, want.topic);
    requests.set(id, [...(requests.get(id) ?? []), { partition: want.partition, fetchOffset: want.offset }]);
  }
  const response = await consumer.fetch({
    node,
    maxWaitTime: FETCH.maxWaitMs,
    minBytes: 1,
    maxBytes: FETCH.maxBytes,
    topics: [...requests].map(([topicId, partitions]) => ({
      topicId,
      partitions: partitions.map((p) => ({
        ...p,
        partitionMaxBytes: FETCH.partitionMaxBytes,
        currentLeaderEpoch: -1,
        lastFetchedEpoch: -1,
      })),
    })),
  });
  const fetched: Fetched[] = [];
  for (const topicResponse of response.responses) {
    const topic = topicNames.get(topicResponse.topicId) ?? '';
    for (const answer of topicResponse.partitions) {
      const from =
        wants.find((w) => w.topic === topic && w.partition === answer.partitionIndex)?.offset ?? 0n;
      const messages: KafkaMessage[] = [];
      let next = from;
      const aborted = new AbortedTransactions(answer.abortedTransactions ?? []);
      for (const batch of answer.records ?? []) {
        const last = batch.firstOffset + BigInt(batch.lastOffsetDelta);
        if (last >= next) next = last + 1n;
        if (aborted.skips(batch, last)) continue;
        for (const record of batch.records) {
          const offset = batch.firstOffset + BigInt(record.offsetDelta);
          // A batch may start before the offset asked for: the broker sends whole batches.
          if (offset < from) continue;
          messages.push({
            offset,
            timestamp: batch.firstTimestamp + record.timestampDelta,
            key: record.key ?? null,
            value: record.value ?? null,
            headers: record.headers,
          });
        }
      }
      fetched.push({
        topic,
        partition: answer.partitionIndex,
        messages,
        next,
        highWatermark: answer.highWatermark,
      });
    }
  }
  return fetched;
}

type RecordBatch = NonNullable<
  Awaited<ReturnType<AnyConsumer['fetch']>>['responses'][number]['partitions'][number]['records']
>[number];

/**
 * Read-committed reading, as Kafka's Java consumer does it: the broker sends aborted records too,
 * with the list of aborted transactions (producer, first offset) in the fetched range; a
 * transactional batch of a producer whose transaction was aborted is skipped until that
 * producer's abort marker. Control batches (the markers) are never messages.
 */
class AbortedTransactions {
  private readonly pending: { producerId: bigint; firstOffset: bigint }[];
  private readonly producers = new Set<bigint>();

  constructor(list: { producerId: bigint; firstOffset: bigint }[]) {
    this.pending = [...list].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : 1));
  }

  skips(batch: RecordBatch, last: bigint): boolean {
    while (this.pending.length > 0 && (this.pending[0]?.firstOffset ?? last + 1n) <= last) {
      this.producers.add((this.pending.shift() as { producerId: bigint }).producerId);
    }
    if ((batch.attributes & CONTROL_BATCH) !== 0) {
      const key = batch.records[0]?.key;
      if (key && key.length >= 4 && key.readInt16BE(2) === ABORT_MARKER)
        this.producers.delete(batch.producerId);
      return true;
    }
    return (batch.attributes & TRANSACTIONAL_BATCH) !== 0 && this.producers.has(batch.producerId);
  }
}

/**
 * Exactly the messages of [from, to) of one partition, read again by offset (a batch claimed
 * before a crash, whose messages are no longer in memory).
 */
export async function readRange(
  consumer: AnyConsumer,
  topics: string[],
  range: { topic: string; partition: number; from: bigint; to: bigint },
  signal: AbortSignal,
): Promise<KafkaMessage[]> {
  const messages: KafkaMessage[] = [];
  let offset = range.from;
  while (offset < range.to) {
    signal.throwIfAborted();
    let answer: Fetched | undefined;
    try {
      [answer] = await fetchOnce(consumer, topics, [{ ...range, offset }]);
    } catch (error) {
      // Deleted since it was claimed (retention): what was read of the range is all there is.
      if (brokerSaid(error, 'OFFSET_OUT_OF_RANGE')) break;
      throw error;
    }
    if (!answer)
      throw new CodedError(
        'SLUICE_ERR_SOURCE',
        `partition ${range.partition} of ${range.topic} has no leader now`,
      );
    for (const message of answer.messages) if (message.offset < range.to) messages.push(message);
    // The end of the log before the range's end: the records were removed (retention) or never
    // committed; what remains of the range is all there is.
    if (answer.next <= offset && answer.highWatermark <= offset) break;
    offset = answer.next > offset ? answer.next : offset;
  }
  return messages;
}
