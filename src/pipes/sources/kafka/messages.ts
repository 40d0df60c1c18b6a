import type { PipeConfig } from '../../model.js';
import {
  type MessagePlan,
  type MessageSource,
  messagePlan,
  SchemaRegistryClient,
} from '../messages/index.js';
import type { KafkaConfig } from './connection.js';
import type { KafkaRecord } from './record-batches.js';

/** Kafka's virtual columns and the types the engine reads them with (README, "How a Kafka pipe runs"). */
const KAFKA_VIRTUAL_TYPES = {
  _key: 'String',
  _timestamp: 'DateTime64(3)',
  _partition: 'Int32',
  _offset: 'Int64',
  _topic: 'String',
  _header_keys: 'Array(String)',
  _header_values: 'Array(String)',
  _raw_message: 'String',
} as const;

export const KAFKA_VIRTUAL_COLUMNS = Object.keys(KAFKA_VIRTUAL_TYPES);

export const kafkaMessages: MessageSource<KafkaRecord> = {
  virtualTypes: KAFKA_VIRTUAL_TYPES,
  value: (message) => message.value,
  valueAt: (message) => message.valueStart,
  valueBytes: (message) => message.bytes,
  valueLength: (message) => message.valueLength,
  virtualValue(column, message) {
    switch (column) {
      case '_key':
        return message.key;
      case '_timestamp':
        return message.timestamp;
      case '_partition':
        return message.partition;
      case '_offset':
        return message.offset;
      case '_topic':
        return message.topic;
      case '_header_keys':
        return message.headers.map(([key]) => key);
      case '_header_values':
        return message.headers.map(([, value]) => value);
      default:
        return message.value;
    }
  },
  position: ({ topic, partition, offset }) => `${topic}:${partition}:${offset}`,
  row: ({ offset }) => Number(offset),
  describe: ({ topic, partition, offset }) => `${topic} partition ${partition} offset ${offset}`,
  // A record without a timestamp of its own says -1.
  producedAt: ({ timestamp }) => (timestamp >= 0 ? timestamp : undefined),
  done: (message) => message.done(),
};

/** How a Kafka pipe's messages become rows, with its schema registry when it names one. */
export function kafkaMessagePlan(config: PipeConfig, allowPrivateSources: boolean): MessagePlan<KafkaRecord> {
  const source = config.source.kafka as KafkaConfig;
  const registry = source.schemaRegistry
    ? new SchemaRegistryClient(source.schemaRegistry, allowPrivateSources)
    : undefined;
  return messagePlan(config, source.format, kafkaMessages, registry);
}
