import type { Problem } from '../../../errors.js';
import type { SourceTable } from './catalog.js';
import { type PostgresSource, pgTable } from './connection.js';
import { identityProblems } from './identity.js';

const PATH = 'source.postgres';

/**
 * What a pipe needs of its mapped tables as the source has them (`tables`, in mapping order;
 * undefined for one that does not exist): at create, and at start after the mappings changed
 * while stopped. Each table exists with a replica identity that lets its changes reach the target
 * (identity.ts), is not a partition of another mapped table (its changes arrive as that table's),
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
    if (!table.readable) {
      problems.push({
        path: `${at}.sourceTable`,
        message: `the user may not read ${schema}.${table.table}: GRANT SELECT ON ${pgTable(schema, table.table)} TO the user of credentials.username`,
      });
    }
    const foreign = table.descendants.filter((d) => d.foreign).map((d) => d.name);
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
