/** Quotes an identifier for ClickHouse: backquotes, with backslash and backquote escaped. */
export function ident(name: string): string {
  return `\`${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;
}

/** Quotes a string literal for ClickHouse. */
export function literal(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** `db`.`table` */
export function tableName(database: string, table: string): string {
  return `${ident(database)}.${ident(table)}`;
}

/** A SETTINGS clause, or '' when there are none. */
export function settingsClause(settings: Record<string, string | number | boolean>): string {
  const entries = Object.entries(settings);
  if (entries.length === 0) return '';
  const value = (v: string | number | boolean) =>
    typeof v === 'string' ? literal(v) : typeof v === 'boolean' ? (v ? '1' : '0') : String(v);
  return ` SETTINGS ${entries.map(([k, v]) => `${k} = ${value(v)}`).join(', ')}`;
}

/**
 * A user's expression inside a statement of ours: parenthesized, each parenthesis on a line of its
 * own, so a trailing `--` comment in it ends at its own line and cannot reach into ours.
 */
export function expression(text: string): string {
  return `(\n${text}\n)`;
}
