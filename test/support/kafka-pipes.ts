import { Producer } from '@platformatic/kafka';
import type { KafkaConnectionOptions } from './kafka.js';

// Helpers of the Kafka pipe tests: messages produced by a real producer, pipe bodies as a user
// writes them.

export interface TestMessage {
  topic: string;
  partition?: number;
  key?: string;
  value: string | Buffer;
  headers?: Record<string, string>;
  timestamp?: bigint;
}

/** Kafka's virtual columns and the column types they are documented to fill (README). */
export const VIRTUAL_COLUMNS = {
  _key: 'String',
  _timestamp: 'DateTime64(3)',
  _partition: 'Int32',
  _offset: 'Int64',
  _topic: 'String',
  _header_keys: 'Array(String)',
  _header_values: 'Array(String)',
  _raw_message: 'String',
};

/** Produces with an idempotent producer (a retried batch cannot write a message twice). */
/** `perSend` messages a request: a request's batch for a partition must stay under the broker's 1 MB. */
export async function produce(
  options: KafkaConnectionOptions,
  messages: TestMessage[],
  perSend = 5_000,
): Promise<void> {
  const producer = new Producer({ clientId: 'sluice-test-producer', ...options, idempotent: true });
  try {
    for (let at = 0; at < messages.length; at += perSend) {
      await producer.send({
        messages: messages.slice(at, at + perSend).map((m) => ({
          topic: m.topic,
          ...(m.partition !== undefined ? { partition: m.partition } : {}),
          ...(m.key !== undefined ? { key: Buffer.from(m.key) } : {}),
          ...(m.timestamp !== undefined ? { timestamp: m.timestamp } : {}),
          value: typeof m.value === 'string' ? Buffer.from(m.value) : m.value,
          ...(m.headers
            ? {
                headers: new Map(
                  Object.entries(m.headers).map(([k, v]) => [Buffer.from(k), Buffer.from(v)] as const),
                ),
              }
            : {}),
        })),
      });
    }
  } finally {
    await producer.close();
  }
}

/** A Kafka pipe into `kafka.<table>` with columns id UInt64 and name String, plus extra mappings. */
export function kafkaPipe(
  table: string,
  kafka: Record<string, unknown>,
  extra: { columns?: { name: string; type: string }[]; mappings?: Record<string, string> } = {},
) {
  const mappings = { id: 'id', name: 'name', ...(extra.mappings ?? {}) };
  return {
    name: table,
    source: { kafka: { format: 'JSONEachRow', ...kafka } },
    destination: {
      database: 'kafka',
      table,
      tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
      columns: [{ name: 'id', type: 'UInt64' }, { name: 'name', type: 'String' }, ...(extra.columns ?? [])],
    },
    fieldMappings: Object.entries(mappings).map(([destinationField, sourceField]) => ({
      sourceField,
      destinationField,
    })),
  };
}

/**
 * For waitForCommittedToEnd (runtime.ts): a Kafka pipe's `partitions` partitions, each at lag 0,
 * and claimed in the store's cursor (per `topic:partition`, the next offset) up to its log end. A
 * partition the pipe never claimed from is not in the cursor: lag 0 says its start is the end.
 */
export function claimedToLogEnd(partitions: number) {
  return (
    cursor: Record<string, string> | null,
    status: {
      partitions?: { topic: string; partition: number; highWatermark: number | null; lag: number | null }[];
    },
  ) =>
    status.partitions?.length === partitions &&
    status.partitions.every((p) => {
      const claimed = cursor?.[`${p.topic}:${p.partition}`];
      return p.lag === 0 && (claimed === undefined || claimed === String(p.highWatermark));
    });
}
