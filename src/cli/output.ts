import type { Row } from './backend.js';

/** Lists print as aligned columns for people, or as JSON with --json for scripts. */
export function printRows(
  rows: Row[],
  columns: string[],
  json: boolean,
  headers: 'upper' | 'as-is' = 'upper',
): void {
  if (json) {
    console.log(JSON.stringify(rows, null, 2));
    return;
  }
  if (rows.length === 0) {
    console.log('(none)');
    return;
  }
  const cells = rows.map((row) => columns.map((column) => String(row[column] ?? '')));
  const widths = columns.map((column, i) =>
    Math.max(column.length, ...cells.map((line) => line[i]?.length ?? 0)),
  );
  const line = (values: string[]) =>
    values
      .map((value, i) => value.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  console.log(line(headers === 'upper' ? columns.map((c) => c.toUpperCase()) : columns));
  for (const values of cells) console.log(line(values));
}

export function printRow(row: Row, json: boolean): void {
  if (json) {
    console.log(JSON.stringify(row, null, 2));
    return;
  }
  const flat = flatten(row, '');
  const width = Math.max(...flat.map(([key]) => key.length));
  for (const [key, value] of flat) console.log(`${`${key}:`.padEnd(width + 2)}${value ?? ''}`);
}

/** Nested objects as dotted keys (`source.objectStorage.url`); arrays as JSON on one line. */
function flatten(row: Row, prefix: string): (readonly [string, unknown])[] {
  return Object.entries(row).flatMap(([key, value]) => {
    const path = `${prefix}${key}`;
    if (Array.isArray(value)) return [[path, JSON.stringify(value)] as const];
    if (value !== null && typeof value === 'object') return flatten(value as Row, `${path}.`);
    return [[path, value] as const];
  });
}
