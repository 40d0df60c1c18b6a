import { countRows, describeTable, type Engine, ident, literal, tableName } from '../../../engine/index.js';
import { SYNCED_AT, type TablePlan } from './tables.js';

/** The table a resync fills beside a target, swapped in when its snapshot is done. */
export function freshName(target: string): string {
  return `${target}__resync`;
}

/** Drops the tables an earlier, unfinished resync filled: a new resync starts them empty. */
export async function dropFresh(engine: Engine, plan: TablePlan): Promise<void> {
  await engine.execute(
    `DROP TABLE IF EXISTS ${tableName(plan.spec.database, freshName(plan.mapping.targetTable))}`,
  );
}

/**
 * Swaps a resync's fresh table in for its target (EXCHANGE TABLES: readers see the old table or
 * the new one, never neither), then drops the old one. Safe to repeat after a crash at any step:
 * every row the old table holds was written before the resync began (`startedAt`) and every row
 * of the fresh one after, so which is which is told by the rows, not by a record kept aside.
 */
export async function swapIn(engine: Engine, plan: TablePlan, startedAt: string): Promise<void> {
  const { database } = plan.spec;
  const target = plan.mapping.targetTable;
  const fresh = freshName(target);
  if (!(await describeTable(engine, database, fresh))) return;
  if (!(await describeTable(engine, database, target))) {
    await engine.execute(`RENAME TABLE ${tableName(database, fresh)} TO ${tableName(database, target)}`);
    return;
  }
  const freshHoldsOld = await rowsSyncedBefore(engine, database, fresh, startedAt);
  const targetHoldsNew = await rowsSyncedSince(engine, database, target, startedAt);
  if (freshHoldsOld === 0 && targetHoldsNew === 0) {
    await engine.execute(`EXCHANGE TABLES ${tableName(database, fresh)} AND ${tableName(database, target)}`);
  }
  await engine.execute(`DROP TABLE ${tableName(database, fresh)}`);
}

async function rowsSyncedBefore(engine: Engine, database: string, table: string, at: string) {
  return count(engine, database, table, `${ident(SYNCED_AT)} < parseDateTime64BestEffort(${literal(at)}, 9)`);
}

async function rowsSyncedSince(engine: Engine, database: string, table: string, at: string) {
  return count(
    engine,
    database,
    table,
    `${ident(SYNCED_AT)} >= parseDateTime64BestEffort(${literal(at)}, 9)`,
  );
}

async function count(engine: Engine, database: string, table: string, where: string): Promise<number> {
  if ((await countRows(engine, database, table)) === 0) return 0;
  const result = await engine.query(`SELECT count() AS n FROM ${tableName(database, table)} WHERE ${where}`);
  return Number(result.rows[0]?.n ?? 0);
}
