import { CodedError } from '../../../errors.js';
import type { RunContext } from '../contract.js';
import type { KafkaConfig } from './connection.js';
import { type KafkaConsumer, splitPartitionKey } from './member.js';

/** ListOffsets' special timestamps: the first offset still in the log, and the end of the log. */
export const EARLIEST = -2n;
export const LATEST = -1n;

/**
 * Where each newly seen partition starts: the store's cursor when the pipe has claimed from it
 * (the truth about what landed), else the consumer group's committed offset (a group the user
 * brought), else `offset.strategy`: the log's start, its end, or the first message at or after
 * `offset.timestamp`, resolved per partition by the broker (a partition made after the run
 * started: its start).
 */
export async function startOffsets(
  context: RunContext,
  source: KafkaConfig,
  consumer: KafkaConsumer,
  keys: string[],
  /** Partitions that did not exist when the run started: read from their start, whatever the strategy. */
  isNew: (key: string) => boolean = () => false,
): Promise<Map<string, bigint>> {
  const cursor = ((await context.progress.cursor()) ?? {}) as Record<string, string>;
  const starts = new Map<string, bigint>();
  const missing = keys.filter((key) => {
    const stored = cursor[key];
    if (stored !== undefined) starts.set(key, BigInt(stored));
    return stored === undefined;
  });
  if (missing.length === 0) return starts;
  const byTopic = groupByTopic(missing);
  const committed = await consumer.listCommittedOffsets({
    topics: [...byTopic].map(([topic, partitions]) => ({ topic, partitions })),
  });
  const fromStrategy: string[] = [];
  for (const key of missing) {
    const [topic, partition] = splitPartitionKey(key);
    const offset = committed.get(topic)?.[partition];
    if (offset !== undefined && offset >= 0n) starts.set(key, offset);
    else fromStrategy.push(key);
  }
  if (fromStrategy.length === 0) return starts;
  const topics = [...groupByTopic(fromStrategy).keys()];
  await requireTopics(consumer, topics);
  const timestamp = strategyTimestamp(source);
  const found = await consumer.listOffsets({ topics, timestamp });
  const ends = timestamp >= 0n ? await consumer.listOffsets({ topics, timestamp: LATEST }) : found;
  const earliest = fromStrategy.some(isNew)
    ? await consumer.listOffsets({ topics, timestamp: EARLIEST })
    : found;
  for (const key of fromStrategy) {
    const [topic, partition] = splitPartitionKey(key);
    const offset = (isNew(key) ? earliest : found).get(topic)?.[partition] ?? -1n;
    // No message at or after the time: start at the end, where the next one will be.
    starts.set(key, offset >= 0n ? offset : (ends.get(topic)?.[partition] ?? 0n));
  }
  return starts;
}

/**
 * The client's listOffsets throws from inside its callback, past any promise, when its metadata
 * lacks a topic (a broker that just restarted): the topics are checked on fresh metadata first.
 */
export async function requireTopics(consumer: KafkaConsumer, topics: string[]): Promise<void> {
  const metadata = await consumer.metadata({ topics, forceUpdate: true });
  const missing = topics.filter((topic) => !metadata.topics.has(topic));
  if (missing.length > 0)
    throw new CodedError('SLUICE_ERR_SOURCE', `the brokers do not know the topics ${missing.join(', ')} now`);
}

function strategyTimestamp(source: KafkaConfig): bigint {
  const strategy =
    source.offset?.strategy ?? (source.offset?.timestamp ? 'from_timestamp' : 'from_beginning');
  if (strategy === 'from_latest') return LATEST;
  if (strategy === 'from_timestamp' && source.offset?.timestamp) {
    return BigInt(Date.parse(`${source.offset.timestamp}:00Z`));
  }
  return EARLIEST;
}

function groupByTopic(keys: string[]): Map<string, number[]> {
  const topics = new Map<string, number[]>();
  for (const key of keys) {
    const [topic, partition] = splitPartitionKey(key);
    topics.set(topic, [...(topics.get(topic) ?? []), partition]);
  }
  return topics;
}
