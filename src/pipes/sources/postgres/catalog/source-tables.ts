import type pg from 'pg';
import { PermanentError } from '../../../records/index.js';
import { pgTable } from '../session/index.js';
import type { SourceColumn } from './column-types.js';

/** The kinds of relation a pipe reads: tables and partitioned tables. */
const TABLE_KINDS = "('r', 'p')";

/** How long counting a table that was never analyzed may take (QUERY_TIMEOUT_MS is for quick ones). */
const COUNT_TIMEOUT_MS = 30 * 60_000;

/** What the old row of a relation's updates and deletes carries (replica-identity.ts). */
export interface ReplicaIdentity {
  /** The primary key's columns in key order; [] without one. */
  primaryKey: string[];
  /** pg_class.relreplident: d(efault), f(ull), i(ndex), n(othing). */
  replicaIdentity: string;
  /** The columns of the index REPLICA IDENTITY USING INDEX names; [] without one. */
  identityIndex: string[];
}

/** A table below a mapped one: a partition (at any level) or an inheritance child. */
export interface Descendant extends ReplicaIdentity {
  /** `schema.table`. */
  name: string;
  schema: string;
  table: string;
  partitioned: boolean;
  /** A foreign table (on another server): PostgreSQL publishes none of its changes. */
  foreign: boolean;
}

/** A source table as Sluice needs to know it. */
export interface SourceTable extends ReplicaIdentity {
  schema: string;
  table: string;
  oid: number;
  columns: SourceColumn[];
  /**
   * Rows as the statistics estimate them, and 8 KB blocks (a partitioned table's: its largest
   * partition's): the ctid ranges a snapshot reads are cut from both.
   */
  estimatedRows: number;
  blocks: number;
  /**
   * A partitioned table: its rows are in its partitions (below), read and published as its own.
   * Another table is read and published without the tables that inherit from it (ONLY).
   */
  partitioned: boolean;
  /** The tables below it: partitions at every level, inheritance children. */
  descendants: Descendant[];
  /**
   * The columns the user may not SELECT, ctid last (a snapshot reads the rows by it): those
   * without a grant on the table or on the column. A partitioned table's partitions are read
   * through it, under its privileges.
   */
  unreadableColumns: string[];
}

/**
 * The table, or undefined when it does not exist (or is not a table). `countUnanalyzed: false`
 * leaves a never-analyzed table's estimate at -1 rather than count its rows (a listing of tables).
 */
export async function readTable(
  client: pg.Client,
  schema: string,
  table: string,
  options: { countUnanalyzed?: boolean } = {},
): Promise<SourceTable | undefined> {
  const found = await client.query<{
    oid: number;
    reltuples: number;
    kind: string;
    readable: boolean;
    ctid: boolean;
  }>(
    `SELECT c.oid::int8::float8 AS oid, c.reltuples::float8 AS reltuples, c.relkind AS kind,
            has_any_column_privilege(c.oid, 'SELECT') AS readable, has_column_privilege(c.oid, 'ctid', 'SELECT') AS ctid
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ${TABLE_KINDS}`,
    [schema, table],
  );
  const row = found.rows[0];
  if (!row) return undefined;
  const tree = await tableTree(client, row.oid);
  const columns = await client.query<{
    name: string;
    type: string;
    oid: number;
    element: string | null;
    kind: string;
    typmod: number;
    notnull: boolean;
    dims: number;
    readable: boolean;
  }>(
    `SELECT a.attname AS name, t.typname AS type, a.atttypid::int8::float8 AS oid, e.typname AS element, t.typtype AS kind,
            a.atttypmod AS typmod, a.attnotnull AS notnull, a.attndims AS dims,
            has_column_privilege(a.attrelid, a.attnum, 'SELECT') AS readable
       FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
       LEFT JOIN pg_type e ON e.oid = t.typelem AND t.typcategory = 'A'
      WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
    [row.oid],
  );
  // A partitioned table's own estimate is its partitions' (PostgreSQL 14 and later keep one).
  let estimatedRows =
    row.kind === 'p'
      ? sumOfEstimates(tree.filter((t) => t.kind === 'r').map((t) => t.reltuples))
      : row.reltuples;
  // Never analyzed (-1): count, so the ranges and the progress have something to go by. A count
  // reads the whole table: it may take longer than a metadata query is given. A table the user
  // may not read at all (a count needs one column), or one with foreign partitions (on another
  // server), is refused (table-rules.ts): it is not counted.
  const foreignPartitions = row.kind === 'p' && tree.some((t) => t.kind === 'f');
  if (estimatedRows < 0 && row.readable && !foreignPartitions && options.countUnanalyzed !== false) {
    // pg takes a query's own query_timeout over the session's; its types do not list it.
    const counted = await client.query<{ n: string }>({
      text: `SELECT count(*)::text AS n FROM ${row.kind === 'p' ? '' : 'ONLY '}${pgTable(schema, table)}`,
      query_timeout: COUNT_TIMEOUT_MS,
    } as pg.QueryConfig);
    estimatedRows = Number(counted.rows[0]?.n ?? 0);
  }
  return {
    schema,
    table,
    oid: row.oid,
    columns: columns.rows.map((c) => ({
      name: c.name,
      type: c.type,
      typeOid: c.oid,
      element: c.element,
      kind: c.kind,
      typmod: c.typmod,
      notNull: c.notnull,
      dimensions: c.dims,
    })),
    ...identityOf(tree[0]),
    estimatedRows,
    blocks: row.kind === 'p' ? Math.max(0, ...tree.map((t) => t.blocks)) : (tree[0]?.blocks ?? 0),
    partitioned: row.kind === 'p',
    unreadableColumns: [
      ...columns.rows.filter((c) => !c.readable).map((c) => c.name),
      ...(row.ctid ? [] : ['ctid']),
    ],
    descendants: tree
      .filter((t) => t.depth > 0)
      .map((t) => ({
        name: `${t.schema}.${t.table}`,
        schema: t.schema,
        table: t.table,
        partitioned: t.kind === 'p',
        foreign: t.kind === 'f',
        ...identityOf(t),
      })),
  };
}

function identityOf(relation: TreeRow | undefined): ReplicaIdentity {
  return {
    primaryKey: relation?.primary_key ?? [],
    replicaIdentity: relation?.replident ?? 'd',
    identityIndex: relation?.identity_index ?? [],
  };
}

/** Rows of tables together; -1 (not known) when one of them was never analyzed. */
function sumOfEstimates(estimates: number[]): number {
  return estimates.some((n) => n < 0) ? -1 : estimates.reduce((sum, n) => sum + n, 0);
}

type TreeRow = {
  schema: string;
  table: string;
  replident: string;
  kind: string;
  blocks: number;
  depth: number;
  reltuples: number;
  primary_key: string[];
  identity_index: string[];
};

/** The columns, in key order, of the index of relation `c` that `which` (a pg_index flag) marks. */
const indexColumns = (which: string) =>
  `ARRAY(SELECT a.attname::text FROM pg_index i
           JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord) ON true
           JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
          WHERE i.indrelid = c.oid AND i.${which} ORDER BY k.ord)`;

/**
 * A table and every table below it (partitions at every level, inheritance children), itself
 * first, with the size of each in blocks and its replica identity. A SELECT of a partitioned
 * table reads every partition, and a ctid range applies to each of them apart: ranges cut up to
 * the largest one's blocks cover every row once. A partition publishes its changes under its own
 * replica identity (replica-identity.ts).
 */
async function tableTree(client: pg.Client, oid: number): Promise<TreeRow[]> {
  const result = await client.query<TreeRow & { blocks: string }>(
    `WITH RECURSIVE tree(oid, depth) AS (
       SELECT $1::int8::oid, 0
       UNION ALL SELECT i.inhrelid, t.depth + 1 FROM pg_inherits i JOIN tree t ON i.inhparent = t.oid)
     SELECT n.nspname AS schema, c.relname AS table, c.relreplident AS replident,
            c.relkind AS kind, t.depth, c.reltuples::float8 AS reltuples,
            (pg_relation_size(c.oid) / current_setting('block_size')::int8)::text AS blocks,
            ${indexColumns('indisprimary')} AS primary_key, ${indexColumns('indisreplident')} AS identity_index
       FROM tree t JOIN pg_class c ON c.oid = t.oid JOIN pg_namespace n ON n.oid = c.relnamespace
      ORDER BY t.depth, n.nspname, c.relname`,
    [oid],
  );
  return result.rows.map((r) => ({ ...r, blocks: Number(r.blocks) }));
}

/**
 * Of `tables`, those the source no longer has as the pipe read them: gone, renamed, or made again
 * under the same name (another oid, which the pipe's publication does not cover).
 */
export async function missingTables(
  client: pg.Client,
  tables: { schema: string; table: string; oid: number }[],
): Promise<{ schema: string; table: string }[]> {
  const result = await client.query<{ schema: string; table: string }>(
    `SELECT s.schema, s.table FROM unnest($1::text[], $2::text[], $3::int8[]) AS s(schema, "table", oid)
      WHERE NOT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                         WHERE c.oid = s.oid::oid AND n.nspname = s.schema AND c.relname = s.table
                           AND c.relkind IN ${TABLE_KINDS})`,
    [tables.map((t) => t.schema), tables.map((t) => t.table), tables.map((t) => t.oid)],
  );
  return result.rows;
}

/**
 * A mapped table the source no longer has (dropped or renamed while the pipe ran or was stopped):
 * reading it again fails the same way for ever, so the pipe fails saying what the user can do.
 */
export function tableGone(schema: string, table: string): PermanentError {
  return new PermanentError(
    'SLUICE_ERR_SOURCE_TABLE_GONE',
    `the source table ${schema}.${table} no longer exists as the pipe read it (dropped, renamed, or dropped and made again): stop the pipe and remove its mapping (tableMappingsToRemove), or make the table again and resync the pipe`,
  );
}

/** A batch of a table whose mapping was removed while the batch was open: it cannot be finished. */
export function mappingRemoved(target: string): PermanentError {
  return new PermanentError(
    'SLUICE_ERR_SOURCE_CONFIG',
    `the table mapping for ${target} was removed while a batch for it was open`,
  );
}
