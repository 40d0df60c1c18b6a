import { CodedError } from '../../../../errors.js';
import type { TablePlan } from '../catalog/index.js';
import { type SourceTable, tableGone } from '../catalog/index.js';
import type { SeenBy } from '../changes/index.js';
import {
  LOCK_NOT_AVAILABLE,
  LOCK_TIMEOUT_MS,
  type PostgresSource,
  pgLiteral,
  pgTable,
} from '../session/index.js';
import { copyToFile } from './copy-out.js';
import type { SnapshotSessions } from './snapshot-sessions.js';

/** How a table's snapshot is cut: ranges of `rangeBlocks` blocks, the last one open-ended. */
export interface TableRanges {
  ranges: number;
  rangeBlocks: number;
  /** The next range to claim. */
  next: number;
  estimatedRows: number;
  /**
   * What the snapshot the ranges read under saw, when it was exported after the slot's (a table
   * without a key whose snapshot started again, or one mapped while stopped): the changes
   * replayed from the slot skip the transactions it saw (changes/seen.ts).
   */
  seenBy?: SeenBy;
}

/** A snapshot batch: one ctid range of one table. */
export interface SnapshotRange {
  kind: 'snapshot';
  table: string;
  index: number;
  fromBlock: number;
  /** Exclusive; null for the last range, which reads to the end of the table. */
  toBlock: number | null;
}

/** How many snapshot ranges run at once: `initialLoadParallelism` of a table, `snapshotNumberOfParallelTables` tables. */
export function snapshotParallelism(settings: PostgresSource['settings']): {
  perTable: number;
  tablesAtOnce: number;
  rangesAtOnce: number;
} {
  const perTable = settings?.initialLoadParallelism ?? 4;
  const tablesAtOnce = settings?.snapshotNumberOfParallelTables ?? 1;
  return { perTable, tablesAtOnce, rangesAtOnce: perTable * tablesAtOnce };
}

/** Cuts a table into ctid ranges of about `rowsPerRange` rows, from its statistics. */
export function planRanges(table: SourceTable, rowsPerRange: number): TableRanges {
  const rowsPerBlock = table.blocks > 0 ? Math.max(1, table.estimatedRows / table.blocks) : 1;
  const rangeBlocks = Math.max(1, Math.floor(rowsPerRange / rowsPerBlock));
  const ranges = Math.max(1, Math.ceil(table.blocks / rangeBlocks));
  return { ranges, rangeBlocks, next: 0, estimatedRows: Math.max(0, Math.round(table.estimatedRows)) };
}

export function rangeAt(table: string, plan: TableRanges, index: number): SnapshotRange {
  const fromBlock = index * plan.rangeBlocks;
  const toBlock = index === plan.ranges - 1 ? null : fromBlock + plan.rangeBlocks;
  return { kind: 'snapshot', table, index, fromBlock, toBlock };
}

/**
 * Writes one range of a table to `file` in COPY's text format (over a reused file's old text), read under the exported snapshot
 * when there is one (a snapshot resumed after a restart reads each range as it is now: the
 * changes from the slot's position, which follow, end in the same rows).
 */
export async function copyRange(
  sessions: SnapshotSessions,
  plan: TablePlan,
  range: SnapshotRange,
  snapshotName: string | null,
  file: { path: string; reused: boolean },
): Promise<number> {
  return sessions.use(async (client) => {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    if (snapshotName) await client.query(`SET TRANSACTION SNAPSHOT ${pgLiteral(snapshotName)}`);
    const where = [`ctid >= '(${range.fromBlock},0)'::tid`];
    if (range.toBlock !== null) where.push(`ctid < '(${range.toBlock},0)'::tid`);
    // A partitioned table's rows are its partitions'; another table's are its own, not those of
    // the tables that inherit from it (whose changes the pipe does not follow).
    const only = plan.source.partitioned ? '' : 'ONLY ';
    const table = `${only}${pgTable(plan.source.schema, plan.source.table)}`;
    let rows: number;
    try {
      rows = await copyToFile(
        client,
        `COPY (SELECT ${plan.copySelect} FROM ${table} WHERE ${where.join(' AND ')}) TO STDOUT`,
        file.path,
        file.reused,
      );
    } catch (error) {
      const { schema, table } = plan.source;
      const code = (error as { code?: string }).code;
      if (code === UNDEFINED_TABLE) throw tableGone(schema, table);
      if (code === LOCK_NOT_AVAILABLE) throw lockedOut(schema, table, error);
      throw error;
    }
    await client.query('COMMIT');
    return rows;
  });
}

/** PostgreSQL's SQLSTATE for a relation that does not exist. */
const UNDEFINED_TABLE = '42P01';

function lockedOut(schema: string, table: string, cause: unknown): Error {
  return new CodedError(
    'SLUICE_ERR_SOURCE_LOCKED',
    `PostgreSQL: ${pgTable(schema, table)} is locked by another session (the snapshot's COPY waited ${LOCK_TIMEOUT_MS.snapshot / 1000} s for it); the range is read again later`,
    { cause },
  );
}
