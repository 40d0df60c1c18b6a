import { ident, literal, type TableSpec } from '../../../engine/index.js';
import type { InsertPlan } from '../../records/index.js';
import type { WrittenTable } from '../contract.js';
import type { SourceTable } from './catalog.js';
import type { PostgresSource } from './connection.js';
import { type ColumnPlan, columnPlan } from './types.js';

export type TableMapping = PostgresSource['tableMappings'][number];

/** The columns Sluice adds to every target (reference/pipes.md, database pipes). */
export const SYNCED_AT = '_pipe_synced_at';
export const IS_DELETED = '_pipe_is_deleted';
export const VERSION = '_pipe_version';

/** How one mapped table is written: its target, and how its rows' text becomes the target's. */
export interface TablePlan {
  mapping: TableMapping;
  source: SourceTable;
  /** The source's columns that are kept (not excluded), in the source's order. */
  columns: ColumnPlan[];
  /** The target's sorting key: the custom one, the primary key, or every column (REPLICA IDENTITY FULL). */
  keys: string[];
  /** The sorting key is the source's primary key: one statement's rows never repeat a key. */
  keysUnique: boolean;
  spec: WrittenTable;
  /** How the engine reads a file of rows (PostgreSQL text, then the deleted flag and the version). */
  insert: InsertPlan;
  /** The snapshot's SELECT list, giving the same fields as a change row. */
  copySelect: string;
  /**
   * When the engine reads every column's text as its target type (ColumnPlan.textIsTarget): the
   * columns of a file of rows, which the service's engine can then load itself (load.ts). The
   * file has no `_pipe_synced_at`: the table loaded fills it.
   */
  textColumns: string | null;
}

export function tablePlan(
  mapping: TableMapping,
  source: SourceTable,
  options: { database: string; allowNullableColumns: boolean },
): TablePlan {
  const excluded = new Set(mapping.excludedColumns ?? []);
  const kept = source.columns.filter((column) => !excluded.has(column.name));
  const keysUnique = !mapping.useCustomSortingKey && source.primaryKey.length > 0;
  const keys = mapping.useCustomSortingKey
    ? (mapping.sortingKeys ?? [])
    : keysUnique
      ? source.primaryKey
      : kept.map((column) => column.name);
  const inKey = new Set(keys);
  const columns = kept.map((column) =>
    columnPlan(column, options.allowNullableColumns && !column.notNull && !inKey.has(column.name)),
  );
  const engine = mapping.tableEngine ?? 'ReplacingMergeTree';
  const spec: TableSpec = {
    database: options.database,
    table: mapping.targetTable,
    columns: [
      ...columns.map((column) => ({ name: column.name, type: column.target })),
      { name: SYNCED_AT, type: 'DateTime64(9)' },
      { name: IS_DELETED, type: 'UInt8' },
      { name: VERSION, type: 'Int64' },
    ],
    engine: engine === 'ReplacingMergeTree' ? { type: engine, versionColumnId: VERSION } : { type: engine },
    sortingKey: keys,
    ...(mapping.partitionByExpr ? { partitionBy: mapping.partitionByExpr } : {}),
  };
  const structure = [
    ...columns.map((column) => `${ident(column.name)} ${column.read}`),
    `${ident(IS_DELETED)} UInt8`,
    `${ident(VERSION)} Int64`,
  ].join(', ');
  const names = [...columns.map((column) => column.name), SYNCED_AT, IS_DELETED, VERSION];
  const selects = [...columns.map((column) => column.select), 'now64(9)', ident(IS_DELETED), ident(VERSION)];
  const insert: InsertPlan = {
    structure,
    columnList: `(${names.map(ident).join(', ')})`,
    selectList: selects.join(', '),
    namedSelectList: selects.map((select, i) => `${select} AS ${ident(names[i] ?? '')}`).join(', '),
  };
  return {
    mapping,
    source,
    columns,
    keys,
    keysUnique,
    spec,
    insert,
    copySelect: [...columns.map((column) => column.copy), '0', '0'].join(', '),
    textColumns: columns.every((column) => column.textIsTarget)
      ? `(${[...columns.map((column) => column.name), IS_DELETED, VERSION].map(ident).join(', ')})`
      : null,
  };
}

/** The engine's settings for reading PostgreSQL's text: NULL as `\N`, times with their offset. */
export const READ_SETTINGS = {
  date_time_input_format: 'best_effort',
  input_format_null_as_default: 1,
} as const;

/**
 * READ_SETTINGS for the engine reading PostgreSQL's text straight into the target's types
 * (TablePlan.textColumns): a bool is t or f.
 */
export const TARGET_TEXT_SETTINGS = {
  ...READ_SETTINGS,
  bool_true_representation: 't',
  bool_false_representation: 'f',
} as const;

/** `file(path, TabSeparated, structure)` for a file of a table's rows. */
export function rowsFileSource(path: string, plan: TablePlan): string {
  return `file(${literal(path)}, 'TabSeparated', ${literal(plan.insert.structure)})`;
}
