import { PermanentError } from '../../../records/index.js';
import type { TablePlan } from '../catalog/index.js';
import { arrayTextToJson } from '../catalog/index.js';
import type { Change, RowChange, Transaction } from './change-stream.js';
import { UNCHANGED, type Value } from './pgoutput.js';

/** A row for the target: each kept column's text (null for NULL), the deleted flag, the version. */
export interface TargetRow {
  fields: (string | null | typeof UNCHANGED)[];
  deleted: 0 | 1;
  version: bigint;
  /**
   * A table without a key: the row's id (catalog/table-plan.ts, ROW_ID). A delete has none until the loader
   * finds which of the row's twins it takes (target/twins.ts), and then that twin's stored hash, which
   * the deleted version must carry to replace it whatever became of the columns since.
   */
  rowId?: string;
  rowHash?: string;
  /** Of a deleted row: the plan's columns (by place) its change did not carry (dropped since). */
  absent?: number[];
}

/** What a batch of changes writes to one table. */
export interface TableChanges {
  plan: TablePlan;
  rows: TargetRow[];
  /** The WAL position of the last TRUNCATE in the batch: older versions go from the target. */
  truncatedAt?: bigint;
}

/**
 * The rows a batch's transactions write, per target table, in WAL order (README, "PostgreSQL
 * pipes"): an insert or update is the row's new version, a delete a version with the deleted flag
 * (its key, or its whole old row under REPLICA IDENTITY FULL), an update that changed the key
 * also a deleted version of the old key. A TOAST value the update left unchanged is taken from the
 * row's last version in the batch; what the batch cannot tell stays UNCHANGED for the caller to
 * find in the target. A table without a key gets a row per inserted row, and a deleted version
 * of one twin per deleted row (keylessRows). `seen(plan, transaction)` says the table's snapshot
 * already holds what a transaction did (its snapshot was taken after the slot's: seen.ts).
 */
export function rowsOfChanges(
  transactions: readonly Transaction[],
  planOf: (schema: string, table: string) => TablePlan | undefined,
  seen: (plan: TablePlan, transaction: Transaction) => boolean = () => false,
): Map<string, TableChanges> {
  const tables = new Map<string, TableChanges & { latest: Map<string, TargetRow> }>();
  const tableFor = (plan: TablePlan) => {
    let entry = tables.get(plan.mapping.targetTable);
    if (!entry) {
      entry = { plan, rows: [], latest: new Map() };
      tables.set(plan.mapping.targetTable, entry);
    }
    return entry;
  };
  for (const transaction of transactions) {
    // Changes at one WAL position (a multi-row insert) are told apart by their place there.
    let position = -1n;
    let place = 0;
    for (const change of transaction.changes) {
      place = change.lsn === position ? place + 1 : 0;
      position = change.lsn;
      if (change.kind === 'truncate') {
        for (const relation of change.relations) {
          const plan = planOf(relation.schema, relation.name);
          if (!plan || seen(plan, transaction)) continue;
          const entry = tableFor(plan);
          entry.rows = [];
          entry.latest.clear();
          entry.truncatedAt = change.lsn;
        }
        continue;
      }
      const plan = planOf(change.relation.schema, change.relation.name);
      if (!plan || seen(plan, transaction)) continue;
      const entry = tableFor(plan);
      if (plan.keyless) {
        entry.rows.push(...keylessRows(plan, change, `${change.lsn}.${place}`));
        continue;
      }
      for (const row of targetRows(plan, change)) {
        const key = keyOf(plan, row.fields);
        if (row.deleted === 0) {
          const previous = entry.latest.get(key);
          row.fields = row.fields.map((field, i) =>
            field === UNCHANGED && previous ? (previous.fields[i] ?? null) : field,
          );
        }
        entry.latest.set(key, row);
        entry.rows.push(row);
      }
    }
  }
  return new Map(
    [...tables].map(([name, { plan, rows, truncatedAt }]) => [
      name,
      { plan, rows, ...(truncatedAt !== undefined ? { truncatedAt } : {}) },
    ]),
  );
}

/** A change's values as the plan's fields (arrays as JSON), in the plan's column order. */
function fieldsReader(plan: TablePlan, change: RowChange) {
  const index = new Map(change.relation.columns.map((column, i) => [column.name, i]));
  return (values: Value[]) =>
    plan.columns.map((column) => {
      const at = index.get(column.name);
      const value = at === undefined ? null : (values[at] ?? null);
      if (typeof value !== 'string') return value;
      return column.array ? arrayTextToJson(value, elementOf(plan, column.name)) : value;
    });
}

/**
 * A table without a key, row for row: an insert is a row of its own (`id`: its WAL position and
 * place there); a delete the deleted version of one twin of its old row (which one, target/table-load.ts
 * decides); an update both. REPLICA IDENTITY FULL sends the whole old row, TOAST values inlined,
 * so an update's unchanged TOAST values are the old row's.
 */
function keylessRows(plan: TablePlan, change: RowChange, id: string): TargetRow[] {
  const fieldsOf = fieldsReader(plan, change);
  if (change.kind !== 'insert' && (!change.old || change.oldIsKey)) {
    const { schema, name } = change.relation;
    throw new PermanentError(
      'SLUICE_ERR_SOURCE_REPLICA_IDENTITY',
      `an ${change.kind} of ${schema}.${name}, a table without a key, came without its whole old row: set ALTER TABLE ${schema}.${name} REPLICA IDENTITY FULL (and on each of its partitions), then resync the pipe`,
    );
  }
  // Under FULL the old row comes whole (TOAST values inlined): nothing of it is left unsaid.
  const old = change.old ? fieldsOf(change.old).map((f) => (f === UNCHANGED ? null : f)) : undefined;
  const carried = new Set(change.relation.columns.map((column) => column.name));
  const absent = plan.columns.flatMap((column, i) => (carried.has(column.name) ? [] : [i]));
  const rows: TargetRow[] = [];
  if (old) rows.push({ fields: old, deleted: 1, version: change.lsn, ...(absent.length ? { absent } : {}) });
  if (change.row) {
    const fields = fieldsOf(change.row).map((field, i) => (field === UNCHANGED ? (old?.[i] ?? null) : field));
    rows.push({ fields, deleted: 0, version: change.lsn, rowId: id });
  }
  return rows;
}

function targetRows(plan: TablePlan, change: RowChange): TargetRow[] {
  const fieldsOf = fieldsReader(plan, change);
  const rows: TargetRow[] = [];
  if (change.old) {
    const old = fieldsOf(change.old);
    const fresh = change.row ? fieldsOf(change.row) : undefined;
    if (!fresh || keyOf(plan, old) !== keyOf(plan, fresh)) {
      rows.push({ fields: old.map((f) => (f === UNCHANGED ? null : f)), deleted: 1, version: change.lsn });
    }
  }
  if (change.row) rows.push({ fields: fieldsOf(change.row), deleted: 0, version: change.lsn });
  return rows;
}

function elementOf(plan: TablePlan, name: string): string | null {
  return plan.source.columns.find((column) => column.name === name)?.element ?? null;
}

/** The row's sorting key, as one string. */
export function keyOf(plan: TablePlan, fields: TargetRow['fields']): string {
  return JSON.stringify(
    plan.keys.map((key) => {
      const field = fields[plan.columns.findIndex((column) => column.name === key)];
      return field === UNCHANGED ? null : (field ?? null);
    }),
  );
}

/**
 * Lines of PostgreSQL's COPY text format: what the snapshot's files hold, so one reader serves
 * both (a table without a key: each row's id, then a deleted row's twin's hash, last).
 */
export function rowsText(rows: readonly TargetRow[]): string {
  let text = '';
  for (const row of rows) {
    const id = row.rowId === undefined ? '' : `\t${copyTextEscape(row.rowId)}`;
    const hash = row.rowHash === undefined ? '' : `\t${row.rowHash}`;
    text += `${copyTextLine(row.fields)}\t${row.deleted}\t${row.version}${id}${hash}\n`;
  }
  return text;
}

/** Fields as one line of COPY's text format (without its end): NULL, and a value not sent, as `\N`. */
export function copyTextLine(fields: readonly (string | null | typeof UNCHANGED)[]): string {
  return fields
    .map((field) => (field === null || field === UNCHANGED ? '\\N' : copyTextEscape(field)))
    .join('\t');
}

function copyTextEscape(value: string): string {
  return value.replace(/[\\\t\n\r]/g, (c) =>
    c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r',
  );
}

export type { Change };
