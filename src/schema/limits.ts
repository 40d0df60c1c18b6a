/**
 * How much one request may define (README, "Limits"). Each is a 400 naming the field when passed,
 * so nothing reaches an engine that it would refuse later (a 20,000-column table exceeds the
 * engine's query size and could never be created).
 */
export const LIMITS = {
  /** A name: a column, a table, a database, a field. */
  name: 255,
  /** A column type or an expression a user writes (tile filters, partition keys, timestamps). */
  expression: 4096,
  columnsPerTable: 1000,
  mappingsPerPipe: 1000,
  sortingKeyColumns: 64,
  tilesPerDashboard: 200,
  selectsPerTile: 20,
} as const;
