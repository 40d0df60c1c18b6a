import { ident, literal } from '../../../../engine/index.js';
import type { ColumnPlan } from '../catalog/index.js';
import { copyTextLine } from '../changes/index.js';

/**
 * Rows of PostgreSQL text as the engine holds them, to be matched against a target's rows: a
 * subquery of `_pipe_wanted` (each row's place in `rows`) and each of `columns`, read the way its
 * rows are loaded (the plan's `read` and `select`), so a timestamp, numeric or bool compares as
 * surely as an integer.
 */
export function typedRowsSql(columns: readonly ColumnPlan[], rows: readonly (string | null)[][]): string {
  const data = rows.map((fields, index) => `${copyTextLine([String(index), ...fields])}\n`).join('');
  const structure = ['_pipe_wanted UInt32', ...columns.map((c) => `${ident(c.name)} ${c.read}`)];
  const typed = columns.map((c) => `${c.select} AS ${ident(c.name)}`);
  return `(SELECT _pipe_wanted, ${typed.join(', ')} FROM format(TabSeparated, ${literal(structure.join(', '))}, ${literal(data)}))`;
}
