import type { Logger } from 'pino';
import { ident, tableName } from '../../../../engine/index.js';
import type { TargetTables } from '../../ports.js';
import { IS_DELETED, type TablePlan } from '../catalog/index.js';

/** Counted no more often than this, and no more often than 20 times the last count took. */
const MIN_EVERY_MS = 10_000;
const COST_FACTOR = 20;

/** A target's live rows (the rows a `FINAL` query without the deleted ones shows) and when counted. */
export interface RowCount {
  rows: number;
  countedAt: string;
}

/**
 * Counts each target's live rows for `/status`, in the background: a `FINAL` count reads the
 * keys of the whole table, so it runs at most every MIN_EVERY_MS and, on a large table, at most a
 * twentieth of the time (a count of 1 s waits 20 s before the next).
 */
export class TargetRowCounts {
  private readonly counts = new Map<string, RowCount>();
  private nextAt = 0;
  private counting = false;

  constructor(
    private readonly tables: TargetTables,
    private readonly logger: Logger,
  ) {}

  get(table: string): RowCount | undefined {
    return this.counts.get(table);
  }

  /**
   * Counts the plans' targets when it is time; a failure is logged and the old figures stay.
   * `onlySnapshot(plan)`: the target holds nothing but rows of its snapshot under way, each key
   * once, so its row count is its live rows without FINAL (read from the parts' metadata).
   */
  async refresh(plans: Iterable<TablePlan>, onlySnapshot: (plan: TablePlan) => boolean): Promise<void> {
    if (this.counting || Date.now() < this.nextAt) return;
    this.counting = true;
    const started = Date.now();
    try {
      for (const plan of plans) {
        const sql = liveRowsSql(plan, onlySnapshot(plan));
        const result = await this.tables.query(sql, { readonly: true, timeoutMs: 60_000 });
        const rows = Number(result.rows[0]?.rows ?? 0);
        this.counts.set(plan.mapping.targetTable, { rows, countedAt: new Date().toISOString() });
      }
    } catch (error) {
      this.logger.debug({ err: error }, "could not count the targets' rows");
    } finally {
      this.counting = false;
      this.nextAt = Date.now() + Math.max(MIN_EVERY_MS, COST_FACTOR * (Date.now() - started));
    }
  }
}

/**
 * The target the user queries (during a resync, not the fresh table being filled). A FINAL count
 * reads every key (half a CPU-second for 5 M rows, bench/postgres.ts): a target of snapshot rows
 * alone is counted from its parts.
 */
function liveRowsSql(plan: TablePlan, onlySnapshot: boolean): string {
  const target = tableName(plan.spec.database, plan.mapping.targetTable);
  if (onlySnapshot) return `SELECT count() AS rows FROM ${target}`;
  return `SELECT count() AS rows FROM ${target} FINAL WHERE ${ident(IS_DELETED)} = 0`;
}
