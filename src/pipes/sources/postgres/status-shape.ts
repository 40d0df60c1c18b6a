import { Type as T } from '@sinclair/typebox';
import { Gauge, type Registry } from 'prom-client';
import { Nullable } from '../../../schema/index.js';
import type { SourceStatuses, StatusShape } from '../contract.js';

/** A database pipe's replication: where the stream and the slot are. */
export interface ReplicationStatus {
  phase: 'snapshot' | 'changes';
  slot: string | null;
  publication: string | null;
  lastReceivedLsn: string | null;
  lastCommittedLsn: string | null;
  /** WAL the server keeps for the slot: its current position past the slot's confirmed one. */
  slotLagBytes: number | null;
  /** Whether the server keeps the WAL the slot needs: `unreserved` loses it soon, `lost` has (changes/slot.ts). */
  slotWalStatus: 'reserved' | 'extended' | 'unreserved' | 'lost' | null;
  changesPerSecond: number;
}

/** One table of a database pipe: its snapshot's progress and its rows. */
export interface TableStatus {
  table: string;
  source: string;
  snapshot: 'copying' | 'done';
  snapshotRanges?: number;
  snapshotRangesDone?: number;
  estimatedRows?: number;
  snapshotRowsThisRun: number;
  /** The target's live rows (FINAL, without deleted ones), counted in the background at `rowsCountedAt`. */
  rows?: number;
  rowsCountedAt?: string;
}

/** What a PostgreSQL pipe adds to its status: its tables while it runs, its slot even when it does not. */
export type PostgresStatus = { replication?: ReplicationStatus; tables?: TableStatus[] };

/** The stream, the slot and each table, in `GET .../status` and as gauges (README, "How a PostgreSQL pipe runs"). */
export const postgresStatusShape: StatusShape<PostgresStatus> = {
  fields: {
    replication: T.Optional(
      T.Object(
        {
          phase: T.String(),
          slot: Nullable(T.String()),
          publication: Nullable(T.String()),
          lastReceivedLsn: Nullable(T.String()),
          lastCommittedLsn: Nullable(T.String()),
          slotLagBytes: Nullable(T.Number()),
          slotWalStatus: Nullable(T.String()),
          changesPerSecond: T.Number(),
        },
        {
          description:
            'PostgreSQL pipes: the stream, the slot, its lag and WAL status (asked of the server when the pipe does not run)',
        },
      ),
    ),
    tables: T.Optional(
      T.Array(
        T.Object({
          table: T.String(),
          source: T.String(),
          snapshot: T.String(),
          snapshotRanges: T.Optional(T.Number()),
          snapshotRangesDone: T.Optional(T.Number()),
          estimatedRows: T.Optional(T.Number()),
          snapshotRowsThisRun: T.Number(),
          rows: T.Optional(T.Number({ description: "The target's live rows (FINAL, not deleted)" })),
          rowsCountedAt: T.Optional(
            T.String({ description: 'When `rows` was counted (every 10 s or more)' }),
          ),
        }),
        { description: 'PostgreSQL pipes while they run: per table, the snapshot progress and the rows' },
      ),
    ),
  },
  registerMetrics: registerReplicationMetrics,
};

/**
 * Per database pipe: how far its slot is behind the server, and the change rate of one this node
 * runs. A pipe that does not run (stopped, failed) still holds its slot, whose lag grows: its lag is
 * what the server said at most a few seconds before the scrape.
 */
function registerReplicationMetrics(
  registry: Registry,
  statuses: SourceStatuses<Partial<PostgresStatus>>,
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
      const idle = await statuses.idle();
      slotLag.reset();
      for (const [pipeId, status] of [...statuses.running(), ...idle]) {
        const replication = status.replication;
        if (replication?.slot && replication.slotLagBytes !== null)
          slotLag.set({ pipe_id: pipeId, slot: replication.slot }, replication.slotLagBytes);
      }
    },
  });
  Object.assign(changes, {
    collect() {
      changes.reset();
      for (const [pipeId, status] of statuses.running()) {
        if (status.replication) changes.set({ pipe_id: pipeId }, status.replication.changesPerSecond);
      }
    },
  });
}
