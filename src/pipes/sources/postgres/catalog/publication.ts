import type pg from 'pg';
import type { Logger } from 'pino';
import { ownedNames, type PostgresSource, pgIdent, pgTable } from '../session/index.js';

/**
 * The publication a pipe streams from, and what it must publish for the changes to match what
 * the snapshot reads: every mapped table, a partitioned table's changes as its own, and every
 * mapped column (a column list or an unpublished generated column would leave it to its default).
 */

/** A mapped column the mapping does not exclude; `kind` tells one PostgreSQL computes itself. */
export interface MappedColumn {
  /** The mapping's index in tableMappings. */
  mapping: number;
  table: string;
  column: string;
  /** GENERATED ALWAYS AS ...: 's' stored, 'v' virtual (PostgreSQL 18 and later); else ''. */
  kind: string;
}

/** `server_version_num`: 180001 for 18.1. */
export async function serverVersion(client: pg.Client): Promise<number> {
  const result = await client.query<{ n: number }>(`SELECT current_setting('server_version_num')::int AS n`);
  return result.rows[0]?.n ?? 0;
}

/** The publication to stream from: the one given (it must exist), else the pipe's own, made now. */
export async function ensurePublication(
  client: pg.Client,
  source: PostgresSource,
  pipeId: string,
): Promise<string> {
  const given = source.settings?.publicationName;
  if (given) return given;
  const name = ownedNames(pipeId).publication;
  const found = await client.query('SELECT 1 FROM pg_publication WHERE pubname = $1', [name]);
  // A partitioned table's changes are its partitions': published as the partitioned table's, they
  // reach its mapping (PostgreSQL 13 and later; the create checks refuse one before). Another
  // table is published without the tables that inherit from it, as its snapshot reads it.
  const partitioned = new Set(await partitionedTables(client, source));
  const tables = source.tableMappings.map((m) => {
    const schema = m.sourceSchemaName ?? 'public';
    const only = partitioned.has(`${schema}.${m.sourceTable}`) ? '' : 'ONLY ';
    return `${only}${pgTable(schema, m.sourceTable)}`;
  });
  const options = (await neededOptions(client, source, partitioned.size > 0)).map((o) => o.set);
  if (found.rowCount === 0) {
    const withOptions = options.length > 0 ? ` WITH (${options.join(', ')})` : '';
    await client.query(`CREATE PUBLICATION ${pgIdent(name)} FOR TABLE ${tables.join(', ')}${withOptions}`);
  } else {
    // Table mappings changed while stopped: the publication follows them.
    await client.query(`ALTER PUBLICATION ${pgIdent(name)} SET TABLE ${tables.join(', ')}`);
    if (options.length > 0)
      await client.query(`ALTER PUBLICATION ${pgIdent(name)} SET (${options.join(', ')})`);
  }
  return name;
}

/** A publication option: as CREATE and ALTER set it, and as pg_publication shows it once set. */
interface PublicationOption {
  set: string;
  column: 'pubviaroot' | 'pubgencols';
  value: string;
}

/**
 * The options the pipe's own publication needs: a partitioned table's changes sent as its own;
 * stored generated columns sent (PostgreSQL 18 and later; the create checks refuse them before,
 * and virtual ones always).
 */
async function neededOptions(
  client: pg.Client,
  source: PostgresSource,
  partitioned: boolean,
): Promise<PublicationOption[]> {
  const options: PublicationOption[] = [];
  if (partitioned)
    options.push({ set: 'publish_via_partition_root = true', column: 'pubviaroot', value: 'true' });
  const stored = (await generatedColumns(client, source)).some((g) => g.kind === 's');
  if (stored && (await serverVersion(client)) >= 180000)
    options.push({ set: 'publish_generated_columns = stored', column: 'pubgencols', value: 's' });
  return options;
}

/**
 * A publication Sluice made before it set the options its tables need (an older version): they
 * are set now, and the warning says what was not followed until then.
 */
export async function alignOwnedPublication(
  client: pg.Client,
  source: PostgresSource,
  publication: string,
  logger: Logger,
): Promise<void> {
  if (source.settings?.publicationName) return;
  const needed = await neededOptions(client, source, (await partitionedTables(client, source)).length > 0);
  if (needed.length === 0) return;
  const current = await client.query<{ options: Record<string, unknown> }>(
    'SELECT to_jsonb(p) AS options FROM pg_publication p WHERE pubname = $1',
    [publication],
  );
  const options = current.rows[0]?.options;
  if (!options) return;
  const missing = needed.filter((option) => String(options[option.column]) !== option.value);
  if (missing.length === 0) return;
  await client.query(
    `ALTER PUBLICATION ${pgIdent(publication)} SET (${missing.map((o) => o.set).join(', ')})`,
  );
  logger.warn(
    { publication, set: missing.map((o) => o.set) },
    "the pipe's publication did not send the changes of partitioned tables or stored generated columns: it does now; resync the pipe to bring in what it missed",
  );
}

/** The mapped tables that are partitioned, each as `schema.table`. */
export async function partitionedTables(client: pg.Client, source: PostgresSource): Promise<string[]> {
  const result = await client.query<{ name: string }>(
    `SELECT format('%s.%s', n.nspname, c.relname) AS name
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind = 'p' AND (n.nspname, c.relname) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
    mappedNames(source),
  );
  return result.rows.map((r) => r.name);
}

/** The generated columns of the mapped tables that the mappings do not exclude. */
export async function generatedColumns(client: pg.Client, source: PostgresSource): Promise<MappedColumn[]> {
  return (await mappedColumns(client, source)).filter((c) => c.kind !== '');
}

/**
 * What of the mapped tables pgoutput cannot send on this server, each with the fix and the field
 * it concerns: a partitioned table before PostgreSQL 13, generated columns (generatedColumnProblem).
 */
export async function unpublishable(
  client: pg.Client,
  source: PostgresSource,
): Promise<{ field: string; message: string }[]> {
  const problems: { field: string; message: string }[] = [];
  const version = await serverVersion(client);
  if (version < 130000) {
    for (const table of await partitionedTables(client, source)) {
      problems.push({
        field: 'tableMappings',
        message: `${table} is partitioned, and PostgreSQL before 13 cannot publish a partitioned table's changes: map its partitions instead, or use replicationMode snapshot`,
      });
    }
  }
  for (const column of await generatedColumns(client, source)) {
    const message = generatedColumnProblem(column, version);
    if (message) problems.push({ field: `tableMappings[${column.mapping}].excludedColumns`, message });
  }
  return problems;
}

/**
 * Why a generated column cannot be followed in the changes, with the fix; undefined when it can.
 * pgoutput sends no generated column before PostgreSQL 18, and no virtual one at all: a changed
 * row would hold the column's default where the snapshot copied its value.
 */
export function generatedColumnProblem(column: MappedColumn, version: number): string | undefined {
  const name = `${column.column} of ${column.table}`;
  if (column.kind === 'v')
    return `${name} is a virtual generated column, which PostgreSQL does not publish: add it to excludedColumns (or make it STORED), or use replicationMode snapshot`;
  if (version < 180000)
    return `${name} is a generated column, which PostgreSQL before 18 does not publish: add it to excludedColumns, or use replicationMode snapshot`;
  return undefined;
}

/**
 * Why a publication the user named cannot send the mapped tables' changes as the pipe reads them,
 * with the fix; undefined when it can. It must cover every mapped table, send a partitioned
 * table's changes as its own (else they come under its partitions' names, which no mapping has),
 * publish every kind of change, send every row (no row filter, PostgreSQL 15 and later), and send
 * every mapped column: all of its column list (15 and later), and without a list, the stored
 * generated ones (publish_generated_columns, 18 and later).
 */
export async function publicationProblem(
  client: pg.Client,
  publication: string,
  source: PostgresSource,
): Promise<string | undefined> {
  const fix = (what: string) => `ALTER PUBLICATION ${pgIdent(publication)} ${what}`;
  const options = await client.query<{ via_root: boolean; gencols: string | null; left_out: string[] }>(
    `SELECT coalesce((to_jsonb(p) ->> 'pubviaroot')::bool, false) AS via_root, to_jsonb(p) ->> 'pubgencols' AS gencols,
            ARRAY(SELECT op FROM jsonb_each_text(jsonb_build_object('insert', p.pubinsert, 'update', p.pubupdate,
                    'delete', p.pubdelete, 'truncate', coalesce((to_jsonb(p) ->> 'pubtruncate')::bool, true))) AS o(op, on_)
                   WHERE o.on_ = 'false' ORDER BY op) AS left_out
       FROM pg_publication p WHERE pubname = $1`,
    [publication],
  );
  const leftOut = options.rows[0]?.left_out ?? [];
  if (leftOut.length > 0) {
    return `the publication ${publication} does not publish ${leftOut.join(', ')}: ${fix("SET (publish = 'insert, update, delete, truncate')")}`;
  }
  // Before PostgreSQL 13 a partitioned table cannot be published at all (unpublishable says so):
  // neither an option nor an ADD TABLE to suggest for it.
  const version = await serverVersion(client);
  const partitioned = await partitionedTables(client, source);
  if (version >= 130000 && !options.rows[0]?.via_root && partitioned.length > 0) {
    return `the publication ${publication} sends the changes of ${partitioned.join(', ')} under the names of its partitions: ${fix('SET (publish_via_partition_root = true)')}`;
  }
  const published = await publishedTables(client, publication, options.rows[0]?.gencols === 's');
  const cannotHold = new Set(version < 130000 ? partitioned : []);
  const missing = source.tableMappings.filter(
    (m) => !published.has(mappedName(m)) && !cannotHold.has(mappedName(m)),
  );
  if (missing.length > 0) {
    const names = missing.map(mappedName);
    const tables = missing.map((m) => pgTable(m.sourceSchemaName ?? 'public', m.sourceTable));
    return `the publication ${publication} does not cover ${names.join(', ')}: ${fix(`ADD TABLE ${tables.join(', ')}`)}`;
  }
  const filtered = source.tableMappings.map(mappedName).filter((table) => published.get(table)?.filtered);
  if (filtered.length > 0) {
    return `the publication ${publication} filters the rows of ${filtered.join(', ')} (a WHERE clause), which the snapshot would copy all of; row filters are not supported yet: ${fix('SET TABLE ...')} without one, or leave publicationName out`;
  }
  // Generated columns pgoutput never sends are refused apart (generatedColumnProblem).
  const left = (await mappedColumns(client, source)).filter(
    (c) =>
      (c.kind === '' || generatedColumnProblem(c, version) === undefined) &&
      !published.get(c.table)?.sends(c),
  );
  const name = (c: MappedColumn) => `${c.column} of ${c.table}`;
  const inLists = left.filter((c) => published.get(c.table)?.listed);
  if (inLists.length > 0) {
    return `the publication ${publication} leaves ${inLists.map(name).join(', ')} out of its column list: publish them (${fix('SET TABLE ... (columns)')}), or add them to excludedColumns`;
  }
  if (left.length === 0) return undefined;
  return `the publication ${publication} does not send the generated columns ${left.map(name).join(', ')}: ${fix('SET (publish_generated_columns = stored)')}, or add them to excludedColumns`;
}

/** Every mapped column the mappings do not exclude; `kind` '' unless PostgreSQL generates it. */
async function mappedColumns(client: pg.Client, source: PostgresSource): Promise<MappedColumn[]> {
  const result = await client.query<{ schema: string; table: string; column: string; kind: string }>(
    `SELECT n.nspname AS schema, c.relname AS table, a.attname AS column, coalesce(to_jsonb(a) ->> 'attgenerated', '') AS kind
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE a.attnum > 0 AND NOT a.attisdropped
        AND (n.nspname, c.relname) IN (SELECT * FROM unnest($1::text[], $2::text[]))
      ORDER BY a.attnum`,
    mappedNames(source),
  );
  return source.tableMappings.flatMap((m, mapping) => {
    const schema = m.sourceSchemaName ?? 'public';
    const excluded = new Set(m.excludedColumns ?? []);
    return result.rows
      .filter((r) => r.schema === schema && r.table === m.sourceTable && !excluded.has(r.column))
      .map((r) => ({ mapping, table: `${schema}.${m.sourceTable}`, column: r.column, kind: r.kind }));
  });
}

/**
 * What a publication sends of each table it covers: the columns of its column list (PostgreSQL
 * 15 and later), else every column but generated ones unless it sends stored ones (18 and later).
 */
async function publishedTables(client: pg.Client, publication: string, sendsStored: boolean) {
  const result = await client.query<{ table: string; columns: string[] | null; filtered: boolean }>(
    `SELECT format('%s.%s', t.schemaname, t.tablename) AS table,
            CASE WHEN coalesce(to_jsonb(pr) -> 'prattrs', 'null') <> 'null' THEN to_jsonb(t) -> 'attnames' END AS columns,
            coalesce(to_jsonb(pr) -> 'prqual', 'null') <> 'null' AS filtered
       FROM pg_publication_tables t
       LEFT JOIN (pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid)
         ON p.pubname = t.pubname AND pr.prrelid = format('%I.%I', t.schemaname, t.tablename)::regclass
      WHERE t.pubname = $1`,
    [publication],
  );
  return new Map(
    result.rows.map((r) => {
      const list = r.columns ? new Set(r.columns) : undefined;
      const sends = (column: MappedColumn) =>
        list ? list.has(column.column) : column.kind === '' || sendsStored;
      return [r.table, { listed: list !== undefined, filtered: r.filtered, sends }];
    }),
  );
}

/** A mapping's source table as `schema.table`, as the catalog queries here name tables. */
function mappedName(mapping: PostgresSource['tableMappings'][number]): string {
  return `${mapping.sourceSchemaName ?? 'public'}.${mapping.sourceTable}`;
}

function mappedNames(source: PostgresSource): [string[], string[]] {
  return [
    source.tableMappings.map((m) => m.sourceSchemaName ?? 'public'),
    source.tableMappings.map((m) => m.sourceTable),
  ];
}
