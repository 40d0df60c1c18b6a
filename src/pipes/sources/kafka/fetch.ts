import { CodedError } from '../../../errors.js';
import { brokerSaid } from './errors.js';
import type { RawFetchConsumer, RawFetchResponse } from './raw-fetch.js';
import { type KafkaRecord, walkRecords } from './record-batches.js';
import { PARTITION_MAX_BYTES } from './sections.js';

export interface FetchWant {
  topic: string;
  partition: number;
  offset: bigint;
}

export interface Fetched {
  topic: string;
  partition: number;
  /** Offsets from the wanted one, in order; control records (transaction markers) left out. */
  messages: KafkaRecord[];
  /** Where the next fetch starts: after the last batch, control batches included. */
  next: bigint;
  highWatermark: bigint;
}

const FETCH = { maxWaitMs: 500, partitionMaxBytes: PARTITION_MAX_BYTES, maxBytes: 16 * 1024 * 1024 };
type Metadata = Awaited<ReturnType<RawFetchConsumer['metadata']>>;

/**
 * One round of Fetch requests, one per partition leader, for the wanted offsets. Whole record
 * batches come back as the broker sent them (no object per message beyond the client's own), which
 * is what lets a pipe read at the broker's speed (test/support/kafka/CLIENT-CHOICE.md).
 */
export async function fetchOnce(
  consumer: RawFetchConsumer,
  topics: string[],
  wants: FetchWant[],
  /** The most bytes an answer holds (a run's first asks for less: reader.ts, fetchLimits). */
  maxBytes = FETCH.maxBytes,
) {
  const metadata = await consumer.metadata({ topics });
  const byLeader = new Map<number, FetchWant[]>();
  for (const want of wants) {
    const leader = metadata.topics.get(want.topic)?.partitions[want.partition]?.leader;
    if (leader === undefined || leader < 0) continue;
    byLeader.set(leader, [...(byLeader.get(leader) ?? []), want]);
  }
  const answers = await Promise.all(
    [...byLeader].map(([node, list]) =>
      fetchFrom(consumer, metadata, node, list, Math.min(maxBytes, FETCH.maxBytes)),
    ),
  );
  return answers.flat();
}

async function fetchFrom(
  consumer: RawFetchConsumer,
  metadata: Metadata,
  node: number,
  wants: FetchWant[],
  maxBytes: number,
): Promise<Fetched[]> {
  const topicNames = new Map<string, string>();
  const requests = new Map<string, { partition: number; fetchOffset: bigint }[]>();
  for (const want of wants) {
    const id = metadata.topics.get(want.topic)?.id ?? '';
    topicNames.set(id, want.topic);
    requests.set(id, [...(requests.get(id) ?? []), { partition: want.partition, fetchOffset: want.offset }]);
  }
  // RawFetchConsumer answers Fetch with the records as bytes (raw-fetch.ts).
  const response = (await consumer.fetch({
    node,
    maxWaitTime: FETCH.maxWaitMs,
    minBytes: 1,
    maxBytes,
    topics: [...requests].map(([topicId, partitions]) => ({
      topicId,
      partitions: partitions.map((p) => ({
        ...p,
        partitionMaxBytes: FETCH.partitionMaxBytes,
        currentLeaderEpoch: -1,
        lastFetchedEpoch: -1,
      })),
    })),
  })) as unknown as RawFetchResponse;
  const fetched: Fetched[] = [];
  for (const topicResponse of response.responses) {
    const topic = topicNames.get(topicResponse.topicId) ?? '';
    for (const answer of topicResponse.partitions) {
      const from =
        wants.find((w) => w.topic === topic && w.partition === answer.partitionIndex)?.offset ?? 0n;
      const where = { topic, partition: answer.partitionIndex, from };
      const walked = answer.records
        ? walkRecords(answer.records, where, answer.abortedTransactions)
        : { records: [], next: from };
      fetched.push({
        topic,
        partition: answer.partitionIndex,
        messages: walked.records,
        next: walked.next,
        highWatermark: answer.highWatermark,
      });
    }
  }
  return fetched;
}

/**
 * Exactly the messages of [from, to) of one partition, read again by offset (a batch claimed
 * before a crash, whose messages are no longer in memory).
 */
export async function readRange(
  consumer: RawFetchConsumer,
  topics: string[],
  range: { topic: string; partition: number; from: bigint; to: bigint },
  signal: AbortSignal,
): Promise<KafkaRecord[]> {
  const messages: KafkaRecord[] = [];
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
