import { Type as T } from '@sinclair/typebox';
import { Gauge } from 'prom-client';
import { Nullable } from '../../../schema/index.js';
import type { StatusShape } from '../contract.js';

/** One shard of a Kinesis stream: who reads it, where it is, how far behind. */
export interface ShardStatus {
  shardId: string;
  /** The shards it was split or merged from: it is read once they are finished. */
  parents: string[];
  state: 'waiting for its parents' | 'reading' | 'finished';
  /** The replica that reads it (of `scaling.replicas`). */
  replica: number | null;
  lastCommittedSequenceNumber: string | null;
  millisBehindLatest: number | null;
  recordsPerSecond: number;
  /** Why it cannot be read now (throttled, unreachable), while its reader retries. */
  trouble?: string;
}

/** What a Kinesis pipe adds to its status while it runs. */
export type KinesisStatus = { shards: ShardStatus[] };

/** Per shard, in `GET .../status` and as gauges (README, "How a Kinesis pipe runs"). */
export const kinesisStatusShape: StatusShape<KinesisStatus> = {
  fields: {
    shards: T.Optional(
      T.Array(
        T.Object({
          shardId: T.String(),
          parents: T.Array(T.String()),
          state: T.String({ description: 'waiting for its parents, reading, or finished' }),
          replica: Nullable(T.Number()),
          lastCommittedSequenceNumber: Nullable(T.String()),
          millisBehindLatest: Nullable(T.Number()),
          recordsPerSecond: T.Number(),
          trouble: T.Optional(T.String()),
        }),
        { description: 'Kinesis pipes while they run: per shard, its reader, position and lag' },
      ),
    ),
  },
  /** Per shard of the Kinesis streams this node runs: how far behind the stream's tip, and the rate. */
  registerMetrics(registry, statuses) {
    const labelNames = ['pipe_id', 'shard_id'];
    const behind = new Gauge({
      name: 'sluice_pipe_shard_millis_behind_latest',
      help: "How far a shard's reader is behind the newest record, as Kinesis says (milliseconds)",
      labelNames,
      registers: [registry],
    });
    const rate = new Gauge({
      name: 'sluice_pipe_shard_records_per_second',
      help: 'Records of a shard committed per second over the last minute',
      labelNames,
      registers: [registry],
    });
    Object.assign(behind, {
      collect() {
        behind.reset();
        rate.reset();
        for (const [pipeId, status] of statuses.running()) {
          for (const shard of status.shards ?? []) {
            const labels = { pipe_id: pipeId, shard_id: shard.shardId };
            rate.set(labels, shard.recordsPerSecond);
            if (shard.millisBehindLatest !== null) behind.set(labels, shard.millisBehindLatest);
          }
        }
      },
    });
  },
};
