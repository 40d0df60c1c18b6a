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
