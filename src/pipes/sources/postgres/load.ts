import { writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import { type Engine, ident, literal, settingsClause, tableName } from '../../../engine/index.js';
import { type BadRecord, loadThroughReader } from '../../records/index.js';
import { copyTextLine, keyOf, rowsText, type TableChanges, type TargetRow } from './changes.js';
import { UNCHANGED } from './pgoutput.js';
import { IS_DELETED, READ_SETTINGS, rowsFileSource, type TablePlan, VERSION } from './tables.js';
import { type ColumnPlan, textOfTarget } from './types.js';

type Engines = { engine: Engine; sourceReader: Engine };

/** How a snapshot range is loaded beside others (read.ts). */
export interface RangeLoad {
  /** Ranges parsed at once on this machine: each parses on one thread when they fill the cores. */
  rangesAtOnce: number;
}

/**
 * Loads a file of a table's rows in COPY's text format into `into` through the source reader
 * (records/load.ts): the engine parses PostgreSQL's text, rows it cannot take go back as bad
 * records of that table. `range` is given for a snapshot range.
 */
export async function loadRowsFile(
  engines: Engines,
  plan: TablePlan,
  file: { path: string; name: string; label: string },
  into: string,
  range?: RangeLoad,
): Promise<BadRecord[]> {
  const skipped = await loadThroughReader(engines, {
    name: file.name,
    from: rowsFileSource(file.path, plan),
    plan: plan.insert,
    settings: { ...READ_SETTINGS, ...(range ? rangeParseSettings(range) : {}) },
    into,
    // The insert's own merge of each block (optimize_on_insert) finds rows of equal key to fold;
    // a range read by one statement holds each primary key once, so that pass would fold nothing.
    ...(range && plan.keysUnique ? { insertSettings: { optimize_on_insert: 0 } } : {}),
  });
  return skipped.map((s) => ({
    source: `${file.label} row ${s.row}`,
    row: s.row,
    error: s.error,
    raw: s.raw,
    table: plan.spec.table,
  }));
}

/**
 * Parallel parsing splits one file among threads; when the ranges in flight already keep every
 * core busy, that split is only overhead (about a sixth of the parse's CPU, bench/postgres.ts).
 */
function rangeParseSettings(range: RangeLoad): Record<string, number> {
  if (range.rangesAtOnce < availableParallelism()) return {};
  return { input_format_parallel_parsing: 0, max_threads: 1 };
}

/**
 * Writes a batch's changes of one table: a TRUNCATE first takes the older versions out of the
 * target (by version, so doing it again after a crash changes nothing), TOAST values the batch
 * could not tell come from the row's last version in the target, then the rows load as a
 * snapshot range does.
 */
export async function loadChanges(
  engines: Engines,
  changes: TableChanges,
  file: { path: string; name: string; label: string },
  into: string,
  logger: Logger,
): Promise<BadRecord[]> {
  const { plan } = changes;
  const target = tableName(plan.spec.database, plan.spec.table);
  if (changes.truncatedAt !== undefined) {
    await engines.engine.execute(`DELETE FROM ${target} WHERE ${ident(VERSION)} < ${changes.truncatedAt}`);
  }
  await fillUnchanged(engines.engine, changes, logger);
  if (changes.rows.length === 0) return [];
  await writeFile(file.path, rowsText(changes.rows));
  return loadRowsFile(engines, plan, file, into);
}

/**
 * Puts the target's values into the fields an update left unchanged (unchanged TOAST values). The
 * keys are matched in the engine as typed values: each wanted key's PostgreSQL text is read the
 * way its rows are (the plan's `read` and `select`), so a timestamp, numeric or bool key finds
 * its row as surely as an integer one.
 */
async function fillUnchanged(engine: Engine, changes: TableChanges, logger: Logger): Promise<void> {
  const { plan } = changes;
  const wanting = changes.rows.filter((row) => row.fields.includes(UNCHANGED));
  if (wanting.length === 0) return;
  const keyColumns = plan.keys.map((key) => {
    const at = plan.columns.findIndex((c) => c.name === key);
    return { at, column: plan.columns[at] as ColumnPlan };
  });
  const wanted = [...new Set(wanting.map((row) => keyOf(plan, row.fields)))];
  const data = wanted
    .map((key, index) => {
      const row = wanting.find((r) => keyOf(plan, r.fields) === key) as TargetRow;
      return `${copyTextLine([String(index), ...keyColumns.map(({ at }) => row.fields[at] ?? null)])}\n`;
    })
    .join('');
  const structure = [
    '_pipe_wanted UInt32',
    ...keyColumns.map(({ column }) => `${ident(column.name)} ${column.read}`),
  ];
  const keysOf = keyColumns.map(({ column }) => `${column.select} AS ${ident(column.name)}`);
  const texts = plan.columns.map(
    (column) => `${textOfTarget(column)} AS ${ident(`_pipe_text_${column.name}`)}`,
  );
  const result = await engine.query(
    `SELECT w._pipe_wanted AS wanted, ${texts.join(', ')}
       FROM (SELECT _pipe_wanted, ${keysOf.join(', ')}
               FROM format(TabSeparated, ${literal(structure.join(', '))}, ${literal(data)})) AS w
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
