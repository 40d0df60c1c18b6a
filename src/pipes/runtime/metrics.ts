import { Gauge, type Registry } from 'prom-client';
import type { Store } from '../../store/index.js';
import type { SourceStatus } from '../sources/index.js';

/**
 * Per-pipe progress as Prometheus gauges, read from the store at scrape time so every node reports
 * the same truth (the counters live in the store, not in a worker's memory). Labelled by pipe id
 * only: /metrics is unauthenticated, and pipe names are their organizations' business.
 */
export function registerPipeMetrics(
  registry: Registry,
  store: Store,
  sources: () => [pipeId: string, status: SourceStatus][] = () => [],
  /** What the sources of the pipes that do not run said last (a stopped database pipe's slot). */
  idleSources: () => Promise<[pipeId: string, status: SourceStatus][]> = async () => [],
): void {
  registerPartitionMetrics(registry, sources);
  registerReplicationMetrics(registry, sources, idleSources);
  registerShardMetrics(registry, sources);
  const counters = [
    ['sluice_pipe_files_done', 'Files a pipe has ingested', 'filesDone'],
    ['sluice_pipe_files_pending', 'Files a pipe has found and not yet ingested', 'filesPending'],
    ['sluice_pipe_rows_written', 'Rows a pipe has written to its destination', 'rowsWritten'],
    ['sluice_pipe_bytes_written', 'Source bytes a pipe has ingested', 'bytesWritten'],
    ['sluice_pipe_bad_records', 'Records a pipe wrote to its error table', 'badRecords'],
  ] as const;
  const gauges = counters.map(
    ([name, help]) => new Gauge({ name, help, labelNames: ['pipe_id'], registers: [registry] }),
  );
  const state = new Gauge({
    name: 'sluice_pipe_state',
    help: 'A pipe is in this state (1)',
    labelNames: ['pipe_id', 'state'],
    registers: [registry],
  });
  // prom-client runs collect() of each metric at scrape time; one store read serves them all.
  let snapshot: Promise<Awaited<ReturnType<Store['repos']['progress']['all']>>> | undefined;
  const read = () => {
    snapshot ??= store.repos.progress.all().finally(() => setTimeout(() => (snapshot = undefined), 0));
    return snapshot;
  };
  gauges.forEach((gauge, i) => {
    const field = counters[i]?.[2] as (typeof counters)[number][2];
    Object.assign(gauge, {
      async collect() {
        gauge.reset();
        for (const pipe of await read()) gauge.set({ pipe_id: pipe.pipeId }, pipe[field]);
      },
    });
  });
  Object.assign(state, {
    async collect() {
      state.reset();
      for (const pipe of await read()) state.set({ pipe_id: pipe.pipeId, state: pipe.state }, 1);
    },
  });
  const cleanups = new Gauge({
    name: 'sluice_source_cleanups_pending',
    help: 'Deleted pipes whose cleanup has not finished: their source still holds what they made there (a replication slot), retried until given back',
    registers: [registry],
  });
  Object.assign(cleanups, {
    async collect() {
      cleanups.set(await store.repos.cleanups.pending());
    },
  });
}

/**
 * Per database pipe: how far its slot is behind the server, and the change rate of one this node
 * runs. A pipe that does not run (stopped, failed) still holds its slot, whose lag grows: its lag is
 * what the server said at most a few seconds before the scrape.
 */
function registerReplicationMetrics(
  registry: Registry,
  sources: () => [string, SourceStatus][],
  idleSources: () => Promise<[string, SourceStatus][]>,
): void {
  const slotLag = new Gauge({
    name: 'sluice_pipe_replication_slot_lag_bytes',
    help: "WAL bytes between the server's current position and the slot's confirmed one",
    labelNames: ['pipe_id', 'slot'],
    registers: [registry],
  });
  const changes = new Gauge({
    name: 'sluice_pipe_replication_changes_per_second',
    help: 'Changes a database pipe committed per second over the last minute',
    labelNames: ['pipe_id'],
    registers: [registry],
  });
  // prom-client collects every metric at once: each gauge fills itself.
  Object.assign(slotLag, {
    async collect() {
      const idle = await idleSources();
      slotLag.reset();
      for (const [pipeId, status] of [...sources(), ...idle]) {
        const replication = status.replication;
        if (replication?.slot && replication.slotLagBytes !== null)
          slotLag.set({ pipe_id: pipeId, slot: replication.slot }, replication.slotLagBytes);
      }
    },
  });
  Object.assign(changes, {
    collect() {
      changes.reset();
      for (const [pipeId, status] of sources()) {
        if (status.replication) changes.set({ pipe_id: pipeId }, status.replication.changesPerSecond);
      }
    },
  });
}

/** Per partition of the streams this node runs: the log's end, and how far behind the pipe is. */
function registerPartitionMetrics(registry: Registry, sources: () => [string, SourceStatus][]): void {
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
      for (const [pipeId, status] of sources()) {
        for (const p of status.partitions ?? []) {
          const labels = { pipe_id: pipeId, topic: p.topic, partition: String(p.partition) };
          offset.set(labels, p.offset);
          if (p.lag !== null) lag.set(labels, p.lag);
        }
      }
    },
  });
}

/** Per shard of the Kinesis streams this node runs: how far behind the stream's tip, and the rate. */
function registerShardMetrics(registry: Registry, sources: () => [string, SourceStatus][]): void {
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
      for (const [pipeId, status] of sources()) {
        for (const shard of status.shards ?? []) {
          const labels = { pipe_id: pipeId, shard_id: shard.shardId };
          rate.set(labels, shard.recordsPerSecond);
          if (shard.millisBehindLatest !== null) behind.set(labels, shard.millisBehindLatest);
        }
      }
    },
  });
}
