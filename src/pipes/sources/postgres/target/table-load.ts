import { rm, writeFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { ident, settingsClause, tableName } from '../../../../engine/index.js';
import { coresTakenBy, type RangeRead, rangeRead } from '../../../records/index.js';
import type { BatchSink, TargetTables } from '../../ports.js';
import {
  type ColumnPlan,
  IS_DELETED,
  READ_SETTINGS,
  rowsFileSource,
  SYNCED_AT,
  TARGET_TEXT_SETTINGS,
  type TablePlan,
  textOfTarget,
  VERSION,
} from '../catalog/index.js';
import { keyOf, rowsText, type TableChanges, type TargetRow, UNCHANGED } from '../changes/index.js';
import { takeTwins } from './twins.js';
import { typedRowsSql } from './typed-rows.js';

/** Where a batch's rows go (run/batch-read.ts): its sink, and the service's tables they join. */
export interface RowsInto {
  sink: BatchSink;
  tables: TargetTables;
}

/** How a file of rows is loaded (run/batch-read.ts). */
export interface RowsLoad {
  logger: Logger;
  /** For a snapshot range: ranges parsed at once, each on one thread when they fill the cores. */
  rangesAtOnce?: number;
}

/**
 * A scratch file (`file`, at `path`) of a table's rows in COPY's text format, and how many rows
 * the source says it holds.
 */
type RowsFile = { file: string; path: string; name: string; label: string; rows: number };

/**
 * Loads a file of a table's rows in COPY's text format into the sink: by the service's engine
 * itself when it can (loadInEngine), else through the source reader, which parses PostgreSQL's
 * text and gives back the rows it cannot take as bad records of that table.
 */
export async function loadRowsFile(
  into: RowsInto,
  plan: TablePlan,
  file: RowsFile,
  load: RowsLoad,
): Promise<RangeRead> {
  const table = plan.spec.table;
  const parse = load.rangesAtOnce === undefined ? {} : rangeParseSettings(load.rangesAtOnce);
  // The insert's own merge of each block (optimize_on_insert) finds rows of equal key to fold;
  // a range read by one statement holds each primary key once, so that pass would fold nothing.
  const insert: Record<string, number> =
    load.rangesAtOnce !== undefined && plan.keysUnique ? { optimize_on_insert: 0 } : {};
  if (await loadInEngine(into, plan, file, { ...parse, ...insert }, load.logger))
    return { rows: file.rows, badRecords: [] };
  const { rows, skipped } = await into.sink.load({
    name: file.name,
    from: rowsFileSource(file.path, plan),
    plan: plan.insert,
    settings: { ...READ_SETTINGS, ...parse },
    table,
    insertSettings: insert,
  });
  const badRecords = skipped.map((s) => ({
    source: `${file.label} row ${s.row}`,
    row: s.row,
    error: s.error,
    raw: s.raw,
    table: plan.spec.table,
  }));
  return { rows, badRecords };
}

/**
 * Parallel parsing splits one file among threads; when the ranges in flight already keep every
 * core busy, that split is only overhead (about a sixth of the parse's CPU, bench/postgres.ts).
 */
function rangeParseSettings(rangesAtOnce: number): Record<string, number> {
  if (!coresTakenBy(rangesAtOnce)) return {};
  return { input_format_parallel_parsing: 0, max_threads: 1 };
}

/**
 * The service's engine loads the file itself when it reads every column's text as its target type
 * (TablePlan.textColumns): no source reader, no intermediate Native file, about a tenth less CPU
 * for the whole snapshot (bench/postgres.ts). It loads into the batch's staging table only, which
 * first gets the default that fills `_pipe_synced_at` as the source reader's now64(9) does (the
 * stage is a copy of the target; a default does not keep a partition from moving). False when the
 * engine refused the file (a value it cannot take: it sets no row aside): the stage is emptied
 * again and the caller reads the file through the source reader, which does.
 */
async function loadInEngine(
  { sink, tables }: RowsInto,
  plan: TablePlan,
  file: RowsFile,
  settings: Record<string, number>,
  logger: Logger,
): Promise<boolean> {
  if (plan.textColumns === null) return false;
  const stage = sink.into(plan.spec.table);
  await tables.execute(`ALTER TABLE ${stage} MODIFY COLUMN ${ident(SYNCED_AT)} DEFAULT now64(9)`);
  const { refused } = await sink.loadText({
    table: plan.spec.table,
    columnList: plan.textColumns,
    file: file.file,
    format: 'TabSeparated',
    settings: { ...TARGET_TEXT_SETTINGS, ...settings },
  });
  if (refused)
    logger.info(
      { err: refused, rows: file.label },
      "the engine could not load PostgreSQL's text itself: the source reader reads it and sets aside the rows it cannot take",
    );
  return refused === undefined;
}

/**
 * Writes a batch's changes of one table: a TRUNCATE first takes the older versions out of the
 * target (by version, so doing it again after a crash changes nothing), TOAST values the batch
 * could not tell come from the row's last version in the target, a table without a key's deletes
 * find the twins they take (twins.ts), then the rows load as a snapshot range does.
 */
export async function loadChanges(
  into: RowsInto,
  changes: TableChanges,
  file: Omit<RowsFile, 'rows'>,
  load: Omit<RowsLoad, 'rangesAtOnce'>,
): Promise<RangeRead> {
  const { plan } = changes;
  const { logger } = load;
  const target = tableName(plan.spec.database, plan.spec.table);
  if (changes.truncatedAt !== undefined) {
    await into.tables.execute(`DELETE FROM ${target} WHERE ${ident(VERSION)} < ${changes.truncatedAt}`);
  }
  await fillUnchanged(into.tables, changes, logger);
  await takeTwins(into.tables, changes, logger);
  // Deleted rows that carry their twin's stored hash are a file of their own, read with it. Two
  // files into one stage go through the source reader: the engine's own load of a file it cannot
  // take empties the stage (loadInEngine), which would lose the other file's rows.
  const hashed = changes.rows.filter((row) => row.rowHash !== undefined);
  const rest = changes.rows.filter((row) => row.rowHash === undefined);
  const two = hashed.length > 0 && rest.length > 0 ? { textColumns: null } : {};
  const reads: RangeRead[] = [];
  for (const [rows, layout, suffix] of [
    [rest, { ...plan, ...two }, ''],
    [hashed, { ...plan, ...plan.withHash, ...two }, '-hashed'],
  ] as const) {
    if (rows.length === 0) continue;
    const part = {
      ...file,
      name: `${file.name}${suffix}`,
      file: `${file.file}${suffix}`,
      path: `${file.path}${suffix}`,
    };
    await writeFile(part.path, rowsText(rows));
    try {
      reads.push(await loadRowsFile(into, layout, { ...part, rows: rows.length }, load));
    } finally {
      if (suffix) await rm(part.path, { force: true });
    }
  }
  return rangeRead(reads);
}

/**
 * Puts the target's values into the fields an update left unchanged (unchanged TOAST values). The
 * keys are matched in the engine as typed values: each wanted key's PostgreSQL text is read the
 * way its rows are (the plan's `read` and `select`), so a timestamp, numeric or bool key finds
 * its row as surely as an integer one.
 */
async function fillUnchanged(engine: TargetTables, changes: TableChanges, logger: Logger): Promise<void> {
  const { plan } = changes;
  const wanting = changes.rows.filter((row) => row.fields.includes(UNCHANGED));
  if (wanting.length === 0) return;
  const keyColumns = plan.keys.map((key) => {
    const at = plan.columns.findIndex((c) => c.name === key);
    return { at, column: plan.columns[at] as ColumnPlan };
  });
  const wanted = [...new Set(wanting.map((row) => keyOf(plan, row.fields)))];
  const keyRows = wanted.map((key) => {
    const row = wanting.find((r) => keyOf(plan, r.fields) === key) as TargetRow;
    return keyColumns.map(({ at }) => {
      const field = row.fields[at];
      return field === UNCHANGED || field === undefined ? null : field;
    });
  });
  const texts = plan.columns.map(
    (column) => `${textOfTarget(column)} AS ${ident(`_pipe_text_${column.name}`)}`,
  );
  const rows = typedRowsSql(
    keyColumns.map(({ column }) => column),
    keyRows,
  );
  const result = await engine.query(
    `SELECT w._pipe_wanted AS wanted, ${texts.join(', ')}
       FROM ${rows} AS w
       INNER JOIN (SELECT * FROM ${tableName(plan.spec.database, plan.spec.table)} FINAL WHERE ${ident(IS_DELETED)} = 0) AS t
       USING (${plan.keys.map(ident).join(', ')})${settingsClause(READ_SETTINGS)}`,
  );
  const found = new Map<string, (string | null)[]>();
  for (const row of result.rows) {
    const values = plan.columns.map((column) => {
      const value = row[`_pipe_text_${column.name}`];
      return value === null || value === undefined ? null : String(value);
    });
    found.set(wanted[Number(row.wanted)] as string, values);
  }
  let missing = 0;
  for (const row of wanting) {
    const last = found.get(keyOf(plan, row.fields));
    if (!last) missing += 1;
    row.fields = row.fields.map((field, i) => (field === UNCHANGED ? (last?.[i] ?? null) : field));
  }
  if (missing > 0) {
    logger.warn(
      { table: plan.mapping.targetTable, rows: missing },
      'updates left TOAST values unchanged for rows the target does not hold: those columns are empty',
    );
  }
}
