/**
 * SQL text the console sends to the query endpoint about a pipe (its history, its bad records):
 * names quoted as the engine quotes them, and pipe ids checked before they are written in.
 */
export function ident(name: string): string {
  return `\`${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;
}

/** Pipe ids are UUIDs (the API refuses others): quoted as they are after that check. */
export function uuidLiteral(id: string): string {
  if (!/^[0-9a-f-]{36}$/i.test(id)) throw new Error(`not a pipe id: ${id}`);
  return `'${id}'`;
}
