import { writeFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { type Engine, ident, literal, tableName } from '../../../engine/index.js';
import { type BadRecord, loadThroughReader } from '../../records/index.js';
import { keyOf, rowsText, type TableChanges } from './changes.js';
import { UNCHANGED } from './pgoutput.js';
import { IS_DELETED, READ_SETTINGS, rowsFileSource, type TablePlan, VERSION } from './tables.js';
import { textOfTarget } from './types.js';

type Engines = { engine: Engine; sourceReader: Engine };

/**
 * Loads a file of a table's rows in COPY's text format into `into` through the source reader
 * (records/load.ts): the engine parses PostgreSQL's text, rows it cannot take go back as bad
 * records of that table.
 */
export async function loadRowsFile(
  engines: Engines,
  plan: TablePlan,
  file: { path: string; name: string; label: string },
  into: string,
): Promise<BadRecord[]> {
  const skipped = await loadThroughReader(engines, {
    name: file.name,
    from: rowsFileSource(file.path, plan),
    plan: plan.insert,
    settings: READ_SETTINGS,
    into,
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

/** Puts the target's values into the fields an update left unchanged (unchanged TOAST values). */
async function fillUnchanged(engine: Engine, changes: TableChanges, logger: Logger): Promise<void> {
  const { plan } = changes;
  const wanting = changes.rows.filter((row) => row.fields.includes(UNCHANGED));
  if (wanting.length === 0) return;
  const keyColumns = plan.keys.map((key) => plan.columns.find((c) => c.name === key));
  const keyTuples = new Set(
    wanting.map((row) => {
      const values = plan.keys.map((key) => {
        const field = row.fields[plan.columns.findIndex((c) => c.name === key)];
        return typeof field === 'string' ? literal(field) : 'NULL';
      });
      return `(${values.join(', ')})`;
    }),
  );
  const texts = [...keyColumns, ...plan.columns].map((column) => (column ? textOfTarget(column) : 'NULL'));
  const keyList = plan.keys.map(ident).join(', ');
  const result = await engine.query(
    `SELECT ${texts.map((t, i) => `${t} AS f${i}`).join(', ')} FROM ${tableName(plan.spec.database, plan.spec.table)} FINAL
      WHERE ${ident(IS_DELETED)} = 0 AND (${keyList}) IN (${[...keyTuples].join(', ')})`,
  );
  const found = new Map<string, (string | null)[]>();
  const keys = plan.keys.length;
  for (const row of result.rows) {
    const values = texts.map((_, i) => {
      const value = row[`f${i}`];
      return value === null || value === undefined ? null : String(value);
    });
    found.set(JSON.stringify(values.slice(0, keys)), values.slice(keys));
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
