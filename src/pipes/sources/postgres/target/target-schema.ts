import type pg from 'pg';
import { addColumnsSql, tableName } from '../../../../engine/index.js';
import { PermanentError } from '../../../records/index.js';
import type { RunContext } from '../../contract.js';
import type { TargetTables } from '../../ports.js';
import { planOptions, readTable, type TablePlan, tableGone, tablePlan } from '../catalog/index.js';
import type { Relation, Transaction } from '../changes/index.js';

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
export async function followSchema(
  tables: TargetTables,
  plan: TablePlan,
  stages: string[] = [],
): Promise<void> {
  const { database, table } = plan.spec;
  const present = await tables.describe(database, table);
  if (!present) return;
  const types = new Map(present.map((column) => [column.name, column.type]));
  for (const column of plan.spec.columns) {
    const type = types.get(column.name);
    if (type !== undefined && type !== column.type) {
      throw new PermanentError(
        'SLUICE_ERR_SOURCE_SCHEMA_CHANGED',
        `column "${column.name}" of ${plan.source.schema}.${plan.source.table} changed type: ${database}.${table} holds ${type} and the column now needs ${column.type}; that change cannot be followed, resync the pipe`,
      );
    }
  }
  const missing = plan.spec.columns.filter((column) => !types.has(column.name));
  if (missing.length === 0) return;
  for (const name of [tableName(database, table), ...stages]) {
    await tables.execute(addColumnsSql(name, missing));
  }
}

/** What following the source's schema needs of a run. */
export interface RelationsHost {
  context: RunContext;
  /** A connection to the source for its catalog. */
  meta: pg.Client;
  planBySource(schema: string, table: string): TablePlan | undefined;
  /** The table's plan made again: the run uses it from now on. */
  replace(plan: TablePlan): void;
}

/**
 * Follows the source's schema before a batch of changes is written (README, "Schema changes"):
 * a relation message that names a new column or a new type makes the table's plan again from the
 * catalog, and the target (with the stage the batch writes into) gets the added columns.
 */
export async function followRelations(
  host: RelationsHost,
  transactions: readonly Transaction[],
  intoTable: (table: string) => string,
): Promise<void> {
  const { context } = host;
  const relations = new Map<number, Relation>();
  for (const transaction of transactions) {
    for (const change of transaction.changes) {
      for (const relation of change.kind === 'truncate' ? change.relations : [change.relation])
        relations.set(relation.oid, relation);
    }
  }
  for (const relation of relations.values()) {
    const plan = host.planBySource(relation.schema, relation.name);
    if (!plan || !shapeChanged(plan, relation)) continue;
    const table = await readTable(host.meta, plan.source.schema, plan.source.table);
    if (!table) throw tableGone(plan.source.schema, plan.source.table);
    const next = tablePlan(plan.mapping, table, planOptions(context));
    await followSchema(context.target, next, [intoTable(plan.spec.table)]);
    host.replace(next);
    context.logger.info(
      { pipeId: context.pipeId, table: plan.mapping.targetTable },
      'the source table changed shape: the target follows it',
    );
  }
}
