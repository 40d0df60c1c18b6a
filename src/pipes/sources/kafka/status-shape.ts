import { Type as T } from '@sinclair/typebox';
import { Gauge } from 'prom-client';
import { Nullable } from '../../../schema/index.js';
import type { StatusShape } from '../contract.js';

/** A stream's position per partition: the next offset to claim, the end of the log, the gap. */
export interface PartitionStatus {
  topic: string;
  partition: number;
  offset: number;
  highWatermark: number | null;
  lag: number | null;
}

/** What a Kafka pipe adds to its status while it runs. */
export type KafkaStatus = { partitions: PartitionStatus[] };

/** Per partition, in `GET .../status` and as gauges (README, "How a Kafka pipe runs"). */
export const kafkaStatusShape: StatusShape<KafkaStatus> = {
  fields: {
    partitions: T.Optional(
      T.Array(
        T.Object({
          topic: T.String(),
          partition: T.Number(),
          offset: T.Number(),
          highWatermark: Nullable(T.Number()),
          lag: Nullable(T.Number()),
        }),
        {
          description: 'Kafka pipes while they run: per partition, the next offset, the log end and the lag',
        },
      ),
    ),
  },
  /** Per partition of the streams this node runs: the log's end, and how far behind the pipe is. */
  registerMetrics(registry, statuses) {
    const labelNames = ['pipe_id', 'topic', 'partition'];
    const lag = new Gauge({
      name: 'sluice_pipe_partition_lag',
      help: 'Messages of a partition after the last one a pipe claimed',
      labelNames,
      registers: [registry],
    });
    const offset = new Gauge({
      name: 'sluice_pipe_partition_offset',
      help: 'The next offset of a partition a pipe will claim',
      labelNames,
      registers: [registry],
    });
    Object.assign(lag, {
      collect() {
        lag.reset();
        offset.reset();
        for (const [pipeId, status] of statuses.running()) {
          for (const p of status.partitions ?? []) {
            const labels = { pipe_id: pipeId, topic: p.topic, partition: String(p.partition) };
            offset.set(labels, p.offset);
            if (p.lag !== null) lag.set(labels, p.lag);
          }
        }
      },
    });
  },
};
