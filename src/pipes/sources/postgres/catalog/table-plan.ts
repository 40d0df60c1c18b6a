import { ident, literal, type TableSpec } from '../../../../engine/index.js';
import type { InsertPlan } from '../../../records/index.js';
import type { RunContext, WrittenTable } from '../../contract.js';
import type { PostgresSource } from '../session/index.js';
import { type ColumnPlan, columnPlan } from './column-types.js';
import type { SourceTable } from './source-tables.js';

export type TableMapping = PostgresSource['tableMappings'][number];

/** The columns Sluice adds to every target (README, "How a PostgreSQL pipe runs"). */
export const SYNCED_AT = '_pipe_synced_at';
export const IS_DELETED = '_pipe_is_deleted';
export const VERSION = '_pipe_version';
/**
 * A table without a key is mirrored row for row (README, "Tables without a key"): each row of the
 * source is one row of the target, identical rows included. `_pipe_row_id` tells a row from its
 * twins (the snapshot's `<partition oid>:<ctid>`, an insert's WAL position and place there);
 * `_pipe_row_hash`, the engine's hash of the row's values, leads the sorting key, so the twins of
 * a deleted or updated row are found by the primary index.
 */
export const ROW_ID = '_pipe_row_id';
export const ROW_HASH = '_pipe_row_hash';

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
  /** The table has no key (REPLICA IDENTITY FULL): its rows are told apart by ROW_ID. */
  keyless: boolean;
  spec: WrittenTable;
  /** How the engine reads a file of rows (PostgreSQL text, then the deleted flag and the version). */
  insert: InsertPlan;
  /** The snapshot's SELECT list, giving the same fields as a change row. */
  copySelect: string;
  /**
   * When the engine reads every column's text as its target type (ColumnPlan.textIsTarget): the
   * columns of a file of rows, which the service's engine can then load itself (target/table-load.ts). The
   * file has no `_pipe_synced_at`: the table loaded fills it.
   */
  textColumns: string | null;
  /** A table without a key: how a file of deleted rows that carry their twin's hash is read. */
  withHash?: Pick<TablePlan, 'insert' | 'textColumns'>;
}

/** How a run's tables are planned: the target database and whether columns may be Nullable. */
export function planOptions(context: RunContext) {
  return {
    database: context.config.destination.database ?? 'default',
    allowNullableColumns: context.config.source.postgres?.settings?.allowNullableColumns === true,
  };
}

export function tablePlan(
  mapping: TableMapping,
  source: SourceTable,
  options: { database: string; allowNullableColumns: boolean },
): TablePlan {
  const excluded = new Set(mapping.excludedColumns ?? []);
  const kept = source.columns.filter((column) => !excluded.has(column.name));
  const keysUnique = !mapping.useCustomSortingKey && source.primaryKey.length > 0;
  const keyless = !mapping.useCustomSortingKey && source.primaryKey.length === 0;
  const keys = mapping.useCustomSortingKey
    ? (mapping.sortingKeys ?? [])
    : keysUnique
      ? source.primaryKey
      : [ROW_HASH, ROW_ID];
  const inKey = new Set(keys);
  const columns = kept.map((column) =>
    columnPlan(column, options.allowNullableColumns && !column.notNull && !inKey.has(column.name)),
  );
  const engine = mapping.tableEngine ?? 'ReplacingMergeTree';
  // The hash is over the columns the table is made with: columns added later keep it as it is,
  // so a row and its deleted version always hash alike (target/twins.ts compares every column besides).
  // xxh3: a sixth of sipHash128's cost, and 64 bits are plenty to narrow a lookup.
  const rowHash = `xxh3(tuple(${columns.map((column) => ident(column.name)).join(', ')}))`;
  const spec: TableSpec = {
    database: options.database,
    table: mapping.targetTable,
    columns: [
      ...columns.map((column) => ({ name: column.name, type: column.target })),
      { name: SYNCED_AT, type: 'DateTime64(9)' },
      { name: IS_DELETED, type: 'UInt8' },
      { name: VERSION, type: 'Int64' },
      ...(keyless
        ? [
            { name: ROW_ID, type: 'String' },
            { name: ROW_HASH, type: 'UInt64', default: rowHash },
          ]
        : []),
    ],
    engine: engine === 'ReplacingMergeTree' ? { type: engine, versionColumnId: VERSION } : { type: engine },
    sortingKey: keys,
    ...(mapping.partitionByExpr ? { partitionBy: mapping.partitionByExpr } : {}),
  };
  const file = fileLayout(columns, [IS_DELETED, VERSION, ...(keyless ? [ROW_ID] : [])]);
  return {
    mapping,
    source,
    columns,
    keys,
    keysUnique,
    keyless,
    spec,
    ...file,
    copySelect: [
      ...columns.map((column) => column.copy),
      '0',
      '0',
      // A row of the snapshot is the row at its ctid (of its partition): unique in the snapshot.
      ...(keyless ? [source.partitioned ? "tableoid::text || ':' || ctid::text" : 'ctid'] : []),
    ].join(', '),
    ...(keyless ? { withHash: fileLayout(columns, [IS_DELETED, VERSION, ROW_ID, ROW_HASH]) } : {}),
  };
}

/** The engine types of the columns a file of rows holds besides the source's. */
const FILE_TYPES: Record<string, string> = {
  [IS_DELETED]: 'UInt8',
  [VERSION]: 'Int64',
  [ROW_ID]: 'String',
  [ROW_HASH]: 'UInt64',
};

/**
 * How a file of rows is read: each kept column's text, then Sluice's own fields (the deleted flag,
 * the version and, without a key, the row's id, and for deleted rows its twin's hash); a hash not
 * in the file the table computes.
 */
function fileLayout(columns: ColumnPlan[], own: string[]): Pick<TablePlan, 'insert' | 'textColumns'> {
  const structure = [
    ...columns.map((column) => `${ident(column.name)} ${column.read}`),
    ...own.map((name) => `${ident(name)} ${FILE_TYPES[name]}`),
  ].join(', ');
  const names = [...columns.map((column) => column.name), SYNCED_AT, ...own];
  const selects = [...columns.map((column) => column.select), 'now64(9)', ...own.map(ident)];
  return {
    insert: {
      structure,
      columnList: `(${names.map(ident).join(', ')})`,
      selectList: selects.join(', '),
      namedSelectList: selects.map((select, i) => `${select} AS ${ident(names[i] ?? '')}`).join(', '),
    },
    textColumns: columns.every((column) => column.textIsTarget)
      ? `(${[...columns.map((column) => column.name), ...own].map(ident).join(', ')})`
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
