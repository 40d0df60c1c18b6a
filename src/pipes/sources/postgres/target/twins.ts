import type { Logger } from 'pino';
import { ident, literal, settingsClause, tableName } from '../../../../engine/index.js';
import type { TargetTables } from '../../ports.js';
import {
  IS_DELETED,
  READ_SETTINGS,
  ROW_HASH,
  ROW_ID,
  SYNCED_AT,
  type TablePlan,
  VERSION,
} from '../catalog/index.js';
import type { TableChanges, TargetRow } from '../changes/index.js';
import { typedRowsSql } from './typed-rows.js';

/** The columns Sluice adds to a target, which are not the source's. */
const OWN_COLUMNS = new Set([SYNCED_AT, IS_DELETED, VERSION, ROW_ID, ROW_HASH]);

/**
 * A row a deleted row may take: its id, and its hash as stored (a row of the target) or its
 * fields (a row inserted earlier in the batch, whose hash the table computes from them).
 */
interface Twin {
  id: string;
  hash?: string;
  fields?: TargetRow['fields'];
}

/** A deleted row's values and the columns its change did not carry, as one key. */
const valuesOf = (row: TargetRow) => JSON.stringify([row.fields, row.absent ?? []]);

/**
 * Decides which twin each delete of a table without a key takes (README, "Tables without a key"):
 * a deleted row is one of the rows with its values, in the target or inserted earlier in the
 * batch, never one an earlier delete of the batch took; the lowest id first, so a batch read again
 * after a crash (the target as it was, since batches of changes move one at a time) takes the
 * same ones. The deleted version carries its twin's stored hash. A delete whose row the target
 * never had (a pipe started `cdc_only` after it was written) deletes nothing, and is logged.
 */
export async function takeTwins(tables: TargetTables, changes: TableChanges, logger: Logger): Promise<void> {
  const { plan } = changes;
  if (!plan.keyless || !changes.rows.some((row) => row.rowId === undefined)) return;
  const deletes = changes.rows.filter((row) => row.rowId === undefined);
  const wanted = [...new Map(deletes.map((row) => [valuesOf(row), row])).values()];
  const inTarget = await twinsInTarget(tables, plan, wanted);
  const inserted: TargetRow[] = [];
  const taken = new Set<string>();
  const kept: TargetRow[] = [];
  let missing = 0;
  for (const row of changes.rows) {
    if (row.rowId !== undefined) {
      inserted.push(row);
      kept.push(row);
      continue;
    }
    const twin = [...(inTarget.get(valuesOf(row)) ?? []), ...insertedTwins(inserted, row)].find(
      (candidate) => !taken.has(candidate.id),
    );
    if (!twin) {
      missing += 1;
      continue;
    }
    taken.add(twin.id);
    kept.push({
      ...row,
      rowId: twin.id,
      ...(twin.hash !== undefined ? { rowHash: twin.hash } : {}),
      ...(twin.fields ? { fields: twin.fields } : {}),
    });
  }
  changes.rows = kept;
  if (missing > 0) {
    logger.warn(
      { table: plan.mapping.targetTable, rows: missing },
      'deletes or updates of rows the target does not hold (written before the pipe followed the table, or a column added since with a default): nothing to delete',
    );
  }
}

/**
 * The rows inserted earlier in the batch that a deleted row may take: equal in the columns its
 * change carried, as PostgreSQL wrote them (one source's text of one value is always the same).
 * The deleted version of such a row takes its fields, so the table hashes both alike.
 */
function insertedTwins(inserted: readonly TargetRow[], deleted: TargetRow): Twin[] {
  const absent = new Set(deleted.absent ?? []);
  const same = (row: TargetRow) =>
    deleted.fields.every((field, i) => absent.has(i) || field === row.fields[i]);
  return inserted.filter(same).map((row) => ({ id: row.rowId as string, fields: row.fields }));
}

/**
 * The rows of the target not deleted with each wanted row's values, lowest id first. Values are
 * compared as the engine holds them (typedRowsSql), NULL equal to NULL, on the columns the change
 * carried. The hash leads the sorting key, so a lookup reads only the granules of the hashes;
 * values it finds nothing for are looked up again in every row, so that a row whose stored hash
 * cannot be made again (a column it covers dropped at the source, an engine that hashes
 * differently) is still found.
 */
async function twinsInTarget(
  tables: TargetTables,
  plan: TablePlan,
  wanted: readonly TargetRow[],
): Promise<Map<string, Twin[]>> {
  const { database, table } = plan.spec;
  const columns = (await tables.describe(database, table)) ?? [];
  const planned = new Set(plan.columns.map((c) => c.name));
  const dropped = columns.some((c) => !OWN_COLUMNS.has(c.name) && !planned.has(c.name));
  const hash = dropped ? undefined : await hashExpression(tables, plan);
  const found = new Map<string, Twin[]>();
  const groups = new Map<string, TargetRow[]>();
  for (const row of wanted) {
    const key = JSON.stringify(row.absent ?? []);
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  for (const rows of groups.values()) {
    const absent = new Set(rows[0]?.absent ?? []);
    const byHash = absent.size === 0 && hash ? await lookUp(tables, plan, rows, hash) : new Map();
    const rest = rows.filter((row) => !byHash.has(valuesOf(row)));
    const everywhere = rest.length > 0 ? await lookUp(tables, plan, rest, undefined) : new Map();
    for (const [values, twins] of [...byHash, ...everywhere]) found.set(values, twins);
  }
  return found;
}

/** One lookup of rows alike in the columns they carry, narrowed by their hash when `hash` is given. */
async function lookUp(
  tables: TargetTables,
  plan: TablePlan,
  rows: readonly TargetRow[],
  hash: string | undefined,
): Promise<Map<string, Twin[]>> {
  const absent = new Set(rows[0]?.absent ?? []);
  const carried = plan.columns.flatMap((column, i) => (absent.has(i) ? [] : [{ column, i }]));
  const wanted = typedRowsSql(
    carried.map(({ column }) => column),
    rows.map((row) => carried.map(({ i }) => (row.fields[i] ?? null) as string | null)),
  );
  const byHash = hash ? ` AND ${ident(ROW_HASH)} IN (SELECT ${hash} FROM ${wanted})` : '';
  const equal = carried.map(
    ({ column }) => `isNotDistinctFrom(w.${ident(column.name)}, t.${ident(column.name)})`,
  );
  const result = await tables.query(
    `SELECT w._pipe_wanted AS wanted, t.${ident(ROW_ID)} AS id, toString(t.${ident(ROW_HASH)}) AS hash
       FROM ${wanted} AS w
       INNER JOIN (SELECT * FROM ${tableName(plan.spec.database, plan.spec.table)} FINAL WHERE ${ident(IS_DELETED)} = 0${byHash}) AS t
       ON ${equal.join(' AND ')}
      ORDER BY wanted, id${settingsClause(READ_SETTINGS)}`,
  );
  const found = new Map<string, Twin[]>();
  for (const row of result.rows) {
    const values = valuesOf(rows[Number(row.wanted)] as TargetRow);
    found.set(values, [...(found.get(values) ?? []), { id: String(row.id), hash: String(row.hash) }]);
  }
  return found;
}

/** The target's own expression of its rows' hash (catalog/table-plan.ts: over the columns it was made with). */
async function hashExpression(tables: TargetTables, plan: TablePlan): Promise<string | undefined> {
  const result = await tables.query(
    `SELECT default_expression AS hash FROM system.columns
      WHERE database = ${literal(plan.spec.database)} AND table = ${literal(plan.spec.table)} AND name = ${literal(ROW_HASH)}`,
  );
  const hash = result.rows[0]?.hash;
  return typeof hash === 'string' && hash !== '' ? hash : undefined;
}
