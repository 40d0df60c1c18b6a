import { addColumnsSql, describeTable, type Engine, tableName } from '../../../engine/index.js';
import { PermanentError } from '../../records/index.js';
import type { Relation } from './pgoutput.js';
import type { TablePlan } from './tables.js';

/**
 * Whether a relation message describes the table differently from the plan: a column the plan
 * does not know (added at the source) or one whose type changed. A column the plan has and the
 * relation lacks (dropped at the source) needs nothing: its rows leave it to its default.
 */
export function shapeChanged(plan: TablePlan, relation: Relation): boolean {
  const excluded = new Set(plan.mapping.excludedColumns ?? []);
  return relation.columns.some((column) => {
    if (excluded.has(column.name)) return false;
    const known = plan.source.columns.find((c) => c.name === column.name);
    return !known || known.typeOid !== column.typeOid;
  });
}

/**
 * Brings a target (and the tables a batch stages into for it) to the plan's columns (README,
 * "Schema changes"): columns the plan has and the target lacks are added at the end; a column
 * whose type the target cannot hold any more fails the pipe, since rewriting it would lose what the
 * target holds. Columns the target has and the plan lacks stay, filled with their default.
 */
export async function followSchema(engine: Engine, plan: TablePlan, stages: string[] = []): Promise<void> {
  const { database, table } = plan.spec;
  const present = await describeTable(engine, database, table);
  if (!present) return;
  const types = new Map(present.map((column) => [column.name, column.type]));
  for (const column of plan.spec.columns) {
    const type = types.get(column.name);
    if (type !== undefined && type !== column.type) {
      throw new PermanentError(
        `column "${column.name}" of ${plan.source.schema}.${plan.source.table} changed type: ${database}.${table} holds ${type} and the column now needs ${column.type}; that change cannot be followed, resync the pipe`,
      );
    }
  }
  const missing = plan.spec.columns.filter((column) => !types.has(column.name));
  if (missing.length === 0) return;
  for (const name of [tableName(database, table), ...stages]) {
    await engine.execute(addColumnsSql(name, missing));
  }
}
