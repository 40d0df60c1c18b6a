import type { TablePlan } from '../catalog/index.js';
import type { ChangeStream, SlotState } from '../changes/index.js';
import { formatLsn } from '../changes/index.js';
import type { TableRanges } from '../snapshot/index.js';
import type { ReplicationStatus, TableStatus } from '../status-shape.js';
import type { RowCount } from '../target/index.js';
import type { Cursor } from './cursor.js';

/** Each mapped table's snapshot progress and live rows, as `GET .../status` shows it. */
export function tableStatuses(
  plans: ReadonlyMap<string, TablePlan>,
  ranges: Readonly<Record<string, TableRanges>>,
  inFlightByTable: ReadonlyMap<string, number>,
  rowsDone: ReadonlyMap<string, number>,
  counted: (table: string) => RowCount | undefined,
): TableStatus[] {
  return [...plans].map(([table, plan]) => {
    const planned = ranges[table];
    const inFlight = inFlightByTable.get(table) ?? 0;
    const count = counted(table);
    const snapshotDone = !planned || (planned.next >= planned.ranges && inFlight === 0);
    return {
      table,
      source: `${plan.source.schema}.${plan.source.table}`,
      snapshot: snapshotDone ? 'done' : 'copying',
      ...(planned
        ? {
            snapshotRanges: planned.ranges,
            snapshotRangesDone: Math.max(0, planned.next - inFlight),
            estimatedRows: planned.estimatedRows,
          }
        : {}),
      snapshotRowsThisRun: rowsDone.get(table) ?? 0,
      ...(count ? { rows: count.rows, rowsCountedAt: count.countedAt } : {}),
    };
  });
}

/** The slot, its positions and lag, and the rate of committed changes, as `/status` shows them. */
export function replicationStatus(
  cursor: Cursor,
  stream: ChangeStream | undefined,
  slotState: SlotState | undefined,
  changesPerSecond: number,
): ReplicationStatus {
  const streaming = cursor.phase === 'cdc';
  return {
    phase: streaming ? 'changes' : 'snapshot',
    slot: cursor.slot,
    publication: cursor.publication,
    lastReceivedLsn: stream ? formatLsn(stream.lastReceived) : null,
    lastCommittedLsn: streaming ? (stream ? formatLsn(stream.confirmed) : cursor.lsn) : null,
    slotLagBytes: slotState?.lagBytes ?? null,
    slotWalStatus: slotState?.walStatus ?? null,
    changesPerSecond: Math.round(changesPerSecond * 10) / 10,
  };
}
