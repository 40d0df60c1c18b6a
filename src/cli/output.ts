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
  const flat = Object.entries(row).flatMap(([key, value]) =>
    value !== null && typeof value === 'object'
      ? Object.entries(value as Row).map(([k, v]) => [`${key}.${k}`, v] as const)
      : [[key, value] as const],
  );
  const width = Math.max(...flat.map(([key]) => key.length));
  for (const [key, value] of flat) console.log(`${`${key}:`.padEnd(width + 2)}${value ?? ''}`);
}
