import type { Problem } from '../../../../errors.js';
import { type PostgresSource, pgTable } from '../session/index.js';
import { identityProblems } from './replica-identity.js';
import type { SourceTable } from './source-tables.js';

const PATH = 'source.postgres';

type TableMapping = PostgresSource['tableMappings'][number];

/**
 * What a pipe needs of its mapped tables as the source has them (`tables`, in mapping order;
 * undefined for one that does not exist): at create, and at start after the mappings changed
 * while stopped. Each table exists with a replica identity that lets its changes reach the target
 * (replica-identity.ts), is not a partition of another mapped table (its changes arrive as that table's),
 * and has the excluded and sorting columns named.
 */
export function mappedTableProblems(
  tables: readonly (SourceTable | undefined)[],
  source: PostgresSource,
  mode: string,
): Problem[] {
  const problems: Problem[] = [];
  const mapped = tables.filter((t) => t !== undefined);
  for (const [index, mapping] of source.tableMappings.entries()) {
    const at = `${PATH}.tableMappings[${index}]`;
    const schema = mapping.sourceSchemaName ?? 'public';
    const table = tables[index];
    if (!table) {
      problems.push({
        path: `${at}.sourceTable`,
        message: `there is no table ${schema}.${mapping.sourceTable}`,
      });
      continue;
    }
    problems.push(...identityProblems(table, mapping, at, mode !== 'snapshot'));
    const within = mapped.find(
      (other) => other.partitioned && other.descendants.some((d) => d.name === `${schema}.${table.table}`),
    );
    if (within) {
      problems.push({
        path: `${at}.sourceTable`,
        message: `${schema}.${mapping.sourceTable} is a partition of ${within.schema}.${within.table}, which the pipe maps too (its changes arrive as the partitioned table's): map one of them`,
      });
    }
    if (mode !== 'cdc_only') problems.push(...readProblems(table, mapping, at));
    // An inheritance parent is read and published ONLY: its children, foreign or not, do not matter.
    const foreign = table.partitioned ? table.descendants.filter((d) => d.foreign).map((d) => d.name) : [];
    if (foreign.length > 0) {
      problems.push({
        path: `${at}.sourceTable`,
        message: `the partitions ${foreign.join(', ')} of ${schema}.${table.table} are foreign tables, whose changes PostgreSQL does not publish and whose rows a snapshot cannot cut into ranges: foreign partitions are not supported yet; detach them, or map the table's other partitions`,
      });
    }
    const names = new Set(table.columns.map((c) => c.name));
    for (const [i, column] of (mapping.excludedColumns ?? []).entries()) {
      if (!names.has(column)) {
        problems.push({
          path: `${at}.excludedColumns[${i}]`,
          message: `${schema}.${mapping.sourceTable} has no column ${column}`,
        });
      } else if (table.primaryKey.includes(column) || (mapping.sortingKeys ?? []).includes(column)) {
        problems.push({
          path: `${at}.excludedColumns[${i}]`,
          message: `${column} is a key column: it cannot be left out`,
        });
      }
    }
    for (const [i, column] of (mapping.sortingKeys ?? []).entries()) {
      if (!names.has(column)) {
        problems.push({
          path: `${at}.sortingKeys[${i}]`,
          message: `${schema}.${mapping.sourceTable} has no column ${column}`,
        });
      }
    }
  }
  return problems;
}

/**
 * Whether the user may read what a snapshot reads of a table: its mapped columns, and ctid, by
 * which the rows are cut into ranges. (Changes come through the slot: cdc_only reads no rows.)
 */
function readProblems(table: SourceTable, mapping: TableMapping, at: string): Problem[] {
  const excluded = new Set(mapping.excludedColumns ?? []);
  const unreadable = table.unreadableColumns.filter((c) => !excluded.has(c));
  if (unreadable.length === 0) return [];
  const name = `${table.schema}.${table.table}`;
  const grant = `GRANT SELECT ON ${pgTable(table.schema, table.table)}`;
  const user = 'TO the user of credentials.username';
  const columns = unreadable.filter((c) => c !== 'ctid');
  const byCtid = columns.length < unreadable.length ? ' (a snapshot cuts its rows into ranges by ctid)' : '';
  const orExclude = columns.length > 0 ? ', or add the columns to excludedColumns' : '';
  const message =
    columns.length === table.columns.length
      ? `the user may not read ${name}: ${grant} ${user} (or use replicationMode cdc_only)`
      : `the user may not read ${unreadable.join(', ')} of ${name}${byCtid}: ${grant} (or those columns) ${user}${orExclude}`;
  return [{ path: `${at}.sourceTable`, message }];
}
