import type pg from 'pg';
import { closeClient, type PostgresSource } from '../session/index.js';
import { connectOrProblem, type ServerContext } from './discover.js';
import { unpublishable } from './publication.js';
import { readTable, type SourceTable } from './source-tables.js';
import { tablePlan } from './table-plan.js';
import { mappedTableProblems } from './table-rules.js';

/** A PostgreSQL server as a listing reaches it: the connection fields of a postgres source. */
export type PostgresConnection = Omit<PostgresSource, 'tableMappings' | 'settings'>;

const MODES = ['cdc', 'snapshot', 'cdc_only'] as const;
type Mode = (typeof MODES)[number];

/** What a pipe would hit, and in which replication modes. */
export interface TableProblem {
  message: string;
  replicationModes: Mode[];
}

export interface ListedTable {
  schema: string;
  table: string;
  partitioned: boolean;
  /** A partitioned table's partitions (`schema.table`), at every level. */
  partitions: string[];
  /** As the server's statistics say; null for a table never analyzed (it is not counted here). */
  estimatedRows: number | null;
  columns: { name: string; type: string; clickhouseType: string; nullable: boolean }[];
  primaryKey: string[];
  replicaIdentity: 'default' | 'full' | 'index' | 'nothing';
  /** The columns of the index `REPLICA IDENTITY USING INDEX` names. */
  replicaIdentityIndex: string[];
  problems: TableProblem[];
}

export interface PostgresTables {
  server: { version: string; walLevel: string; mayReplicate: boolean };
  /** Problems of the server itself (every table meets them). */
  problems: TableProblem[];
  tables: ListedTable[];
  /** More tables than MAX_TABLES: the first ones, by schema and name. */
  truncated: boolean;
}

/** A table picker shows this many at most. */
const MAX_TABLES = 1000;
const IDENTITY: Record<string, ListedTable['replicaIdentity']> = {
  d: 'default',
  f: 'full',
  i: 'index',
  n: 'nothing',
};

/**
 * Every table of the database that a pipe could map (tables and partitioned tables; partitions
 * are listed under their table), with its columns, keys and replica identity, and what a pipe
 * mapping it would be refused for, per replication mode: the create checks' own rules
 * (table-rules.ts, replica-identity.ts, publication.ts) run on each table alone. No row is read.
 */
export async function listPostgresTables(
  connection: PostgresConnection,
  context: ServerContext,
): Promise<PostgresTables> {
  const source = { ...connection, tableMappings: [] } as PostgresSource;
  const client = await connectOrProblem(source, context);
  try {
    const server = await serverFacts(client);
    const names = await tableNames(client);
    const tables: SourceTable[] = [];
    for (const { schema, table } of names.slice(0, MAX_TABLES)) {
      const read = await readTable(client, schema, table, { countUnanalyzed: false });
      if (read) tables.push(read);
    }
    const unsent = await unpublishableProblems(client, source, tables);
    return {
      server: { version: server.version, walLevel: server.walLevel, mayReplicate: server.mayReplicate },
      problems: serverProblems(server),
      tables: tables.map((table, index) => listed(source, table, unsent.get(index) ?? [])),
      truncated: names.length > MAX_TABLES,
    };
  } finally {
    await closeClient(client, context.logger);
  }
}

function listed(source: PostgresSource, table: SourceTable, unsent: string[]): ListedTable {
  const mapping = { sourceSchemaName: table.schema, sourceTable: table.table, targetTable: table.table };
  const plan = tablePlan(mapping, table, { database: 'default', allowNullableColumns: false });
  const target = new Map(plan.columns.map((column) => [column.name, column.target]));
  const byMode = MODES.map((mode) => ({
    mode,
    messages: mappedTableProblems([table], { ...source, tableMappings: [mapping] }, mode).map(
      (p) => p.message,
    ),
  }));
  const problems = mergeModes([
    ...byMode,
    { mode: 'cdc', messages: unsent },
    { mode: 'cdc_only', messages: unsent },
  ]);
  return {
    schema: table.schema,
    table: table.table,
    partitioned: table.partitioned,
    partitions: table.descendants.map((d) => d.name),
    estimatedRows: table.estimatedRows < 0 ? null : table.estimatedRows,
    columns: table.columns.map((column) => ({
      name: column.name,
      type: column.element ? `${column.element}[]` : column.type,
      clickhouseType: target.get(column.name) ?? 'String',
      nullable: !column.notNull,
    })),
    primaryKey: table.primaryKey,
    replicaIdentity: IDENTITY[table.replicaIdentity] ?? 'default',
    replicaIdentityIndex: table.identityIndex,
    problems,
  };
}

/** One entry per message, with every mode that meets it, in the order they first came. */
function mergeModes(found: { mode: Mode; messages: string[] }[]): TableProblem[] {
  const merged = new Map<string, Mode[]>();
  for (const { mode, messages } of found) {
    for (const message of messages) {
      const modes = merged.get(message) ?? [];
      if (!modes.includes(mode)) modes.push(mode);
      merged.set(message, modes);
    }
  }
  return [...merged].map(([message, replicationModes]) => ({ message, replicationModes }));
}

async function tableNames(client: pg.Client): Promise<{ schema: string; table: string }[]> {
  const result = await client.query<{ schema: string; table: string }>(
    `SELECT n.nspname AS schema, c.relname AS table
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
        AND n.nspname NOT IN ('pg_catalog', 'information_schema')
        AND n.nspname !~ '^pg_(toast|temp_)'
      ORDER BY 1, 2 LIMIT ${MAX_TABLES + 1}`,
  );
  return result.rows;
}

/**
 * What pgoutput cannot send of the listed tables on this server (publication.ts: generated columns,
 * partitioned tables before PostgreSQL 13), per table: all are asked at once, as if one pipe
 * mapped them all.
 */
async function unpublishableProblems(
  client: pg.Client,
  source: PostgresSource,
  tables: SourceTable[],
): Promise<Map<number, string[]>> {
  const tableMappings = tables.map((t) => ({
    sourceSchemaName: t.schema,
    sourceTable: t.table,
    targetTable: t.table,
  }));
  const byTable = new Map<number, string[]>();
  if (tables.length === 0) return byTable;
  for (const { field, message } of await unpublishable(client, { ...source, tableMappings })) {
    const named = /^tableMappings\[(\d+)\]/.exec(field)?.[1];
    const index =
      named === undefined
        ? tables.findIndex((t) => message.startsWith(`${t.schema}.${t.table} `))
        : Number(named);
    if (index < 0) continue;
    byTable.set(index, [...(byTable.get(index) ?? []), message]);
  }
  return byTable;
}

interface ServerFacts {
  version: string;
  walLevel: string;
  mayReplicate: boolean;
}

async function serverFacts(client: pg.Client): Promise<ServerFacts> {
  const result = await client.query<{ version: string; wal_level: string; may: boolean }>(
    `SELECT current_setting('server_version') AS version, current_setting('wal_level') AS wal_level,
            coalesce((SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user), false) AS may`,
  );
  const row = result.rows[0];
  return {
    version: row?.version ?? '',
    walLevel: row?.wal_level ?? '',
    mayReplicate: row?.may === true,
  };
}

/** What the create checks refuse of the server itself for a pipe that follows changes. */
function serverProblems(server: ServerFacts): TableProblem[] {
  const changes: Mode[] = ['cdc', 'cdc_only'];
  const problems: TableProblem[] = [];
  if (server.walLevel !== 'logical') {
    problems.push({
      message: `the server's wal_level is ${server.walLevel}: set wal_level = logical and restart it (or use replicationMode snapshot)`,
      replicationModes: changes,
    });
  }
  if (!server.mayReplicate) {
    problems.push({
      message:
        'the user may not replicate: ALTER ROLE ... WITH REPLICATION (or use replicationMode snapshot)',
      replicationModes: changes,
    });
  }
  return problems;
}
