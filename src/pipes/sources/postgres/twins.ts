import type { Logger } from 'pino';
import {
  describeTable,
  type Engine,
  ident,
  literal,
  settingsClause,
  tableName,
} from '../../../engine/index.js';
import { copyTextLine, type TableChanges, type TargetRow } from './changes.js';
import { IS_DELETED, READ_SETTINGS, ROW_HASH, ROW_ID, SYNCED_AT, type TablePlan, VERSION } from './tables.js';

/** The columns Sluice adds to a target, which are not the source's. */
const OWN_COLUMNS = new Set([SYNCED_AT, IS_DELETED, VERSION, ROW_ID, ROW_HASH]);

/**
 * Decides which twin each delete of a table without a key takes (README, "Tables without a key"):
 * a deleted row is one of the rows with its values, in the target or inserted earlier in the
 * batch; the lowest id of those not deleted yet, so a batch read again after a crash (the target
 * as it was, since batches of changes move one at a time) takes the same ones. A delete whose
 * row the target never had (a pipe started `cdc_only` after it was written) deletes nothing.
 */
export async function takeTwins(engine: Engine, changes: TableChanges, logger: Logger): Promise<void> {
  const { plan } = changes;
  if (!plan.keyless || !changes.rows.some((row) => row.rowId === undefined)) return;
  const valuesOf = (row: TargetRow) => JSON.stringify(row.fields);
  const wanted = [...new Set(changes.rows.filter((r) => r.rowId === undefined).map(valuesOf))];
  const live = await twinsInTarget(engine, plan, wanted);
  const kept: TargetRow[] = [];
  let missing = 0;
  for (const row of changes.rows) {
    const ids = live.get(valuesOf(row)) ?? [];
    live.set(valuesOf(row), ids);
    if (row.rowId !== undefined) {
      ids.push(row.rowId);
      kept.push(row);
      continue;
    }
    const id = ids.shift();
    if (id === undefined) missing += 1;
    else kept.push({ ...row, rowId: id });
  }
  changes.rows = kept;
  if (missing > 0) {
    logger.warn(
      { table: plan.mapping.targetTable, rows: missing },
      'deletes or updates of rows the target does not hold (written before the pipe followed the table): nothing to delete',
    );
  }
}

/**
 * The ids of the rows of the target not deleted whose values are each wanted row's (as PostgreSQL
 * text, JSON), lowest first. Values are compared as the engine holds them, each wanted row read
 * the way its rows are (the plan's `read` and `select`), NULL equal to NULL. The hash leads the
 * sorting key, so the lookup reads only the granules of those hashes; after a source column the
 * hash covers was dropped, a row's hash cannot be made again and every row is compared.
 */
async function twinsInTarget(
  engine: Engine,
  plan: TablePlan,
  wanted: string[],
): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  if (wanted.length === 0) return found;
  const { database, table } = plan.spec;
  const columns = (await describeTable(engine, database, table)) ?? [];
  const planned = new Set(plan.columns.map((c) => c.name));
  const dropped = columns.some((c) => !OWN_COLUMNS.has(c.name) && !planned.has(c.name));
  const hash = await hashExpression(engine, plan);
  const data = wanted
    .map((value, index) => `${copyTextLine([String(index), ...(JSON.parse(value) as (string | null)[])])}\n`)
    .join('');
  const structure = ['_pipe_wanted UInt32', ...plan.columns.map((c) => `${ident(c.name)} ${c.read}`)];
  const typed = plan.columns.map((c) => `${c.select} AS ${ident(c.name)}`);
  const rows = `(SELECT _pipe_wanted, ${typed.join(', ')} FROM format(TabSeparated, ${literal(structure.join(', '))}, ${literal(data)}))`;
  const byHash = dropped || !hash ? '' : ` AND ${ident(ROW_HASH)} IN (SELECT ${hash} FROM ${rows})`;
  const equal = plan.columns.map((c) => `isNotDistinctFrom(w.${ident(c.name)}, t.${ident(c.name)})`);
  const result = await engine.query(
    `SELECT w._pipe_wanted AS wanted, t.${ident(ROW_ID)} AS id
       FROM ${rows} AS w
       INNER JOIN (SELECT * FROM ${tableName(database, table)} FINAL WHERE ${ident(IS_DELETED)} = 0${byHash}) AS t
       ON ${equal.join(' AND ')}
      ORDER BY wanted, id${settingsClause(READ_SETTINGS)}`,
  );
  for (const row of result.rows) {
    const value = wanted[Number(row.wanted)] as string;
    found.set(value, [...(found.get(value) ?? []), String(row.id)]);
  }
  return found;
}

/** The target's own expression of its rows' hash (tables.ts: over the columns it was made with). */
async function hashExpression(engine: Engine, plan: TablePlan): Promise<string | undefined> {
  const result = await engine.query(
    `SELECT default_expression AS hash FROM system.columns
      WHERE database = ${literal(plan.spec.database)} AND table = ${literal(plan.spec.table)} AND name = ${literal(ROW_HASH)}`,
  );
  const hash = result.rows[0]?.hash;
  return typeof hash === 'string' && hash !== '' ? hash : undefined;
}
