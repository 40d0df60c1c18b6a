import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { sourceStatusFields } from '../runtime-port.js';
import type { SourceStatus } from '../sources/index.js';
import { SOURCE_KINDS } from '../sources/index.js';
import { registerSourceMetrics } from './metrics.js';

/** The registry's connectors, in its order. */
const CONNECTORS = SOURCE_KINDS.map((kind) => kind.connector);

// What every kind's sources say, as each kind's StatusShape turns it into gauges: one pipe of
// each kind runs, and a stopped database pipe's slot is known from its idle status.
const running: [string, SourceStatus][] = [
  ['p-kafka', { partitions: [{ topic: 'events', partition: 0, offset: 40, highWatermark: 42, lag: 2 }] }],
  [
    'p-kinesis',
    {
      shards: [
        {
          shardId: 'shardId-000000000000',
          parents: [],
          state: 'reading',
          replica: 0,
          lastCommittedSequenceNumber: null,
          millisBehindLatest: 1500,
          recordsPerSecond: 3,
        },
      ],
    },
  ],
  ['p-files', { rowsPerSecond: 9 }],
  ['p-pg', { replication: replication('slot_a', 2048, 7.5), tables: [] }],
];
const idle: [string, SourceStatus][] = [['p-stopped', { replication: replication('slot_b', 4096, 0) }]];

function replication(slot: string, slotLagBytes: number, changesPerSecond: number) {
  return {
    phase: 'changes',
    slot,
    publication: null,
    lastReceivedLsn: null,
    lastCommittedLsn: null,
    slotLagBytes,
    slotWalStatus: 'reserved',
    changesPerSecond,
  };
}

describe("the gauges made of each kind's source status", () => {
  it('name each kind’s parts by pipe with the labels the README documents', async () => {
    const registry = new Registry();
    registerSourceMetrics(registry, { running: () => running, idle: async () => idle }, CONNECTORS);
    const values = (await registry.metrics()).split('\n').filter((line) => line && !line.startsWith('#'));
    expect(values.sort()).toEqual(
      [
        'sluice_pipe_partition_lag{pipe_id="p-kafka",topic="events",partition="0"} 2',
        'sluice_pipe_partition_offset{pipe_id="p-kafka",topic="events",partition="0"} 40',
        'sluice_pipe_shard_millis_behind_latest{pipe_id="p-kinesis",shard_id="shardId-000000000000"} 1500',
        'sluice_pipe_shard_records_per_second{pipe_id="p-kinesis",shard_id="shardId-000000000000"} 3',
        'sluice_pipe_replication_slot_lag_bytes{pipe_id="p-pg",slot="slot_a"} 2048',
        'sluice_pipe_replication_slot_lag_bytes{pipe_id="p-stopped",slot="slot_b"} 4096',
        'sluice_pipe_replication_changes_per_second{pipe_id="p-pg"} 7.5',
      ].sort(),
    );
  });

  it('the status response lists every part a kind adds, in the order of the connectors', () => {
    expect(Object.keys(sourceStatusFields(CONNECTORS))).toEqual([
      'partitions',
      'shards',
      'replication',
      'tables',
    ]);
  });
});
