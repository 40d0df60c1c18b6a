import type { EngineColumn, Queryable } from './engine.js';
import { expression, ident, literal, tableName } from './sql.js';

/** A destination table as a pipe defines it (destination.columns and tableDefinition). */
export interface TableSpec {
  database: string;
  table: string;
  /** `default`: an expression of Sluice's own (never a user's text) filling the column on insert. */
  columns: (EngineColumn & { default?: string })[];
  engine: {
    type: 'MergeTree' | 'ReplacingMergeTree' | 'SummingMergeTree' | 'Null';
    versionColumnId?: string;
    columnIds?: string[];
  };
  sortingKey?: string[];
  partitionBy?: string;
  primaryKey?: string;
}

export async function ensureDatabase(engine: Queryable, database: string): Promise<void> {
  await engine.execute(`CREATE DATABASE IF NOT EXISTS ${ident(database)}`);
}

/**
 * The CREATE TABLE statement of a managed table. It sets no engine setting: the table behaves for
 * a user's own inserts as the same table made by hand (no deduplication of equal blocks). Column types and expressions (partitionBy,
 * primaryKey) are the user's, read by the engine as one type or expression before they were stored
 * (statement.ts); each ends its own line here, so a trailing comment in one cannot reach further.
 */
export function createTableSql(
  spec: TableSpec,
  options: { ifNotExists?: boolean; name?: string } = {},
): string {
  const columns = spec.columns
    .map((c) => `\n  ${ident(c.name)} ${c.type}\n${c.default ? ` DEFAULT ${c.default}` : ''}`)
    .join(', ');
  // A primary key alone is the sorting key too, as the hosted service makes it (the engine needs
  // the primary key to be a prefix of the sorting key).
  const orderBy = spec.sortingKey?.length
    ? `(${spec.sortingKey.map(ident).join(', ')})`
    : spec.primaryKey
      ? expression(spec.primaryKey)
      : 'tuple()';
  const engine = engineClause(spec);
  const clauses =
    spec.engine.type === 'Null'
      ? ''
      : [
          spec.partitionBy ? ` PARTITION BY ${expression(spec.partitionBy)}` : '',
          ` ORDER BY ${orderBy}`,
          spec.primaryKey ? ` PRIMARY KEY ${expression(spec.primaryKey)}` : '',
        ].join('');
  const name = tableName(spec.database, options.name ?? spec.table);
  return `CREATE TABLE ${options.ifNotExists ? 'IF NOT EXISTS ' : ''}${name} (${columns}) ENGINE = ${engine}${clauses}`;
}

/** Adds columns at the end of a table (its qualified name), each only when missing: safe to repeat. */
export function addColumnsSql(table: string, columns: readonly EngineColumn[]): string {
  const adds = columns.map((c) => `ADD COLUMN IF NOT EXISTS ${ident(c.name)} ${c.type}`).join(', ');
  return `ALTER TABLE ${table} ${adds}`;
}

function engineClause(spec: TableSpec): string {
  switch (spec.engine.type) {
    case 'ReplacingMergeTree':
      return `ReplacingMergeTree(${ident(spec.engine.versionColumnId ?? '')})`;
    case 'SummingMergeTree':
      return spec.engine.columnIds?.length
        ? `SummingMergeTree((${spec.engine.columnIds.map(ident).join(', ')}))`
        : 'SummingMergeTree';
    default:
      return spec.engine.type;
  }
}

/** The table's columns, or undefined when it does not exist. */
export async function describeTable(
  engine: Queryable,
  database: string,
  table: string,
): Promise<EngineColumn[] | undefined> {
  const result = await engine.query(
    `SELECT name, type FROM system.columns WHERE database = ${literal(database)} AND table = ${literal(table)} ORDER BY position`,
  );
  if (result.rows.length === 0) return undefined;
  return result.rows.map((row) => ({ name: String(row.name), type: String(row.type) }));
}

export async function countRows(engine: Queryable, database: string, table: string): Promise<number> {
  return countRowsOf(engine, tableName(database, table));
}

/** The rows of a table named already quoted (`tableName`, a stage's `stageTable`). */
export async function countRowsOf(engine: Queryable, quotedTable: string): Promise<number> {
  const result = await engine.query(`SELECT count() AS n FROM ${quotedTable}`);
  return Number(result.rows[0]?.n ?? 0);
}
