import type { _Record } from '@aws-sdk/client-kinesis';
import type { MessageSource } from '../messages/index.js';

/** A Kinesis record with where it came from. */
export interface KinesisMessage {
  value: Buffer;
  stream: string;
  shard: string;
  /** Kinesis sequence numbers are decimal strings of up to 128 bits: compared as BigInt. */
  sequence: string;
  partitionKey: string;
  /** ApproximateArrivalTimestamp, in milliseconds. */
  arrivedAt: number;
}

/** Kinesis's virtual columns and their engine types (README, "How a Kinesis pipe runs"). */
export const KINESIS_VIRTUAL_TYPES = {
  _key: 'String',
  _timestamp: 'DateTime64(3)',
  _stream: 'String',
  _shard_id: 'String',
  _sequence_number: 'String',
  _raw_message: 'String',
} as const;

export const KINESIS_VIRTUAL_COLUMNS = Object.keys(KINESIS_VIRTUAL_TYPES);

export const kinesisMessages: MessageSource<KinesisMessage> = {
  virtualTypes: KINESIS_VIRTUAL_TYPES,
  value: (message) => message.value,
  valueBytes: (message) => message.value,
  valueAt: () => 0,
  valueLength: (message) => message.value.length,
  virtualValue(column, message) {
    switch (column) {
      case '_key':
        return message.partitionKey;
      case '_timestamp':
        return message.arrivedAt;
      case '_stream':
        return message.stream;
      case '_shard_id':
        return message.shard;
      case '_sequence_number':
        return message.sequence;
      default:
        return message.value;
    }
  },
  position: (message) => `${message.stream}:${message.shard}:${message.sequence}`,
  // Sequence numbers do not fit the error table's row number: the shard's position is in `source`.
  row: () => 0,
  describe: (message) => `${message.stream} shard ${message.shard} sequence number ${message.sequence}`,
  producedAt: (message) => (message.arrivedAt > 0 ? message.arrivedAt : undefined),
};

/** A record as GetRecords gives it, with where it came from. */
export function kinesisMessage(record: _Record, stream: string, shard: string): KinesisMessage {
  return {
    value: Buffer.from(record.Data ?? new Uint8Array()),
    stream,
    shard,
    sequence: record.SequenceNumber ?? '',
    partitionKey: record.PartitionKey ?? '',
    arrivedAt: record.ApproximateArrivalTimestamp?.getTime() ?? 0,
  };
}
