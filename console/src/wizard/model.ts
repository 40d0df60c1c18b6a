import { KINDS, type SourceKind, sourceOf, type Values } from './kinds.js';

/** A column of the new table: from a discovered field, renamed or left out in the column editor. */
export interface ColumnChoice {
  sourceField: string;
  name: string;
  type: string;
  include: boolean;
}

export interface TableChoice {
  database: string;
  table: string;
  engine: 'MergeTree' | 'ReplacingMergeTree' | 'SummingMergeTree' | 'Null';
  sortingKey: string[];
  partitionBy: string;
}

/** A PostgreSQL table picked for the pipe, and the table it fills. */
export interface PickedTable {
  schema: string;
  table: string;
  targetTable: string;
}

export interface Draft {
  kind: SourceKind;
  values: Values;
  name: string;
  columns: ColumnChoice[];
  table: TableChoice;
  picked: PickedTable[];
  replicationMode: 'cdc' | 'snapshot' | 'cdc_only';
}

export function newDraft(kind: SourceKind): Draft {
  return {
    kind,
    values: { ...KINDS[kind].defaults },
    name: '',
    columns: [],
    table: { database: 'default', table: '', engine: 'MergeTree', sortingKey: [], partitionBy: '' },
    picked: [],
    replicationMode: 'cdc',
  };
}

/** The source alone, as schemaDiscovery and postgresTables take it. */
export function sourceBody(draft: Draft): Record<string, unknown> {
  return { [draft.kind]: sourceOf(draft.kind, draft.values) };
}

/** The create body the review shows and the create sends (README, "Pipes"). */
export function createBody(draft: Draft): Record<string, unknown> {
  const source = sourceOf(draft.kind, draft.values);
  if (draft.kind === 'postgres') {
    return {
      name: draft.name,
      source: {
        postgres: {
          ...source,
          settings: { replicationMode: draft.replicationMode },
          tableMappings: draft.picked.map((t) => ({
            sourceSchemaName: t.schema,
            sourceTable: t.table,
            targetTable: t.targetTable,
          })),
        },
      },
      destination: { database: draft.table.database },
    };
  }
  const included = draft.columns.filter((c) => c.include);
  const renamed = included.filter((c) => c.name !== c.sourceField);
  return {
    name: draft.name,
    source: { [draft.kind]: source },
    destination: {
      database: draft.table.database,
      table: draft.table.table,
      managedTable: true,
      tableDefinition: {
        engine: { type: draft.table.engine },
        ...(draft.table.sortingKey.length ? { sortingKey: draft.table.sortingKey } : {}),
        ...(draft.table.partitionBy ? { partitionBy: draft.table.partitionBy } : {}),
      },
      columns: included.map((c) => ({ name: c.name, type: c.type })),
    },
    ...(renamed.length
      ? { fieldMappings: renamed.map((c) => ({ sourceField: c.sourceField, destinationField: c.name })) }
      : {}),
  };
}

const SECRET_KEYS = new Set(['password', 'secretKey', 'connectionString', 'serviceAccountKey', 'privateKey']);

/** The body with its secrets masked, for the review's display (the create itself sends them). */
export function masked(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(masked);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [key, SECRET_KEYS.has(key) ? '********' : masked(inner)]),
    );
  }
  return value;
}

/** The same create as a curl line for a terminal (`$AUTH` is `<key id>:<key secret>`). */
export function curlOf(url: string, body: unknown): string {
  const json = JSON.stringify(body, null, 2).replace(/'/g, "'\\''");
  return `curl -s -u "$AUTH" -X POST '${url}' \\\n  -H 'content-type: application/json' -d '${json}'`;
}
