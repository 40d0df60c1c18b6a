import { ident, literal, tableName } from '../../../../engine/index.js';
import { PermanentError } from '../../../records/index.js';
import type { TargetTables } from '../../ports.js';
import { SYNCED_AT, type TablePlan } from '../catalog/index.js';

/** The table a resync fills beside a target, swapped in when its snapshot is done. */
export function freshName(target: string): string {
  return `${target}__resync`;
}

/** Drops the tables an earlier, unfinished resync filled: a new resync starts them empty. */
export async function dropFresh(tables: TargetTables, plan: TablePlan): Promise<void> {
  await tables.execute(
    `DROP TABLE IF EXISTS ${tableName(plan.spec.database, freshName(plan.mapping.targetTable))}`,
  );
}

/** Empties a target (a resync without a snapshot: `cdc_only`). */
export async function emptyTarget(tables: TargetTables, plan: TablePlan): Promise<void> {
  await tables.execute(`TRUNCATE TABLE IF EXISTS ${tableName(plan.spec.database, plan.mapping.targetTable)}`);
}

/**
 * Swaps a resync's fresh table in for its target (EXCHANGE TABLES: readers see the old table or
 * the new one, never neither), then drops the old one. Safe to repeat after a crash at any step:
 * every row the old table holds was written before the resync began (`startedAt`, the engine's
 * clock) and every row of the fresh one after, so which is which is told by the rows. When the
 * rows cannot tell, nothing is dropped and the pipe fails saying so.
 */
export async function swapIn(tables: TargetTables, plan: TablePlan, startedAt: string): Promise<void> {
  const { database } = plan.spec;
  const target = plan.mapping.targetTable;
  const fresh = freshName(target);
  if (!(await tables.describe(database, fresh))) return;
  if (!(await tables.describe(database, target))) {
    await tables.execute(`RENAME TABLE ${tableName(database, fresh)} TO ${tableName(database, target)}`);
    return;
  }
  const [freshOld, freshNew] = await rowsAround(tables, database, fresh, startedAt);
  const [targetOld, targetNew] = await rowsAround(tables, database, target, startedAt);
  if (freshOld === 0 && targetNew === 0) {
    await tables.execute(`EXCHANGE TABLES ${tableName(database, fresh)} AND ${tableName(database, target)}`);
  } else if (!(freshNew === 0 && targetOld === 0)) {
    throw new PermanentError(
      'SLUICE_ERR_RESYNC_NEEDED',
      `cannot tell which of ${database}.${target} and ${database}.${fresh} holds the resync's rows (both hold rows written before and after it began): keep the one you want as ${target}, drop the other, then resync again`,
    );
  }
  // The fresh table's name now holds the old rows.
  await tables.execute(`DROP TABLE ${tableName(database, fresh)}`);
}

/** Rows written before `at`, and since. */
async function rowsAround(tables: TargetTables, database: string, table: string, at: string) {
  if ((await tables.countRows(database, table)) === 0) return [0, 0];
  const since = `${ident(SYNCED_AT)} >= parseDateTime64BestEffort(${literal(at)}, 9)`;
  const result = await tables.query(
    `SELECT countIf(NOT (${since})) AS before, countIf(${since}) AS since FROM ${tableName(database, table)}`,
  );
  return [Number(result.rows[0]?.before ?? 0), Number(result.rows[0]?.since ?? 0)];
}
