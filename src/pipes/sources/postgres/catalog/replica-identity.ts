import type { Problem } from '../../../../errors.js';
import { type PostgresSource, pgTable } from '../session/index.js';
import type { ReplicaIdentity, SourceTable } from './source-tables.js';

type TableMapping = PostgresSource['tableMappings'][number];

/** A relation whose changes are a mapped table's: the table itself, or one of its partitions. */
type Publisher = ReplicaIdentity & { schema: string; table: string };

/**
 * What an update's or a delete's old row carries at a relation's replica identity: 'all' under
 * REPLICA IDENTITY FULL, else the primary key's or the identity index's columns.
 */
function carriedBy(relation: ReplicaIdentity): string[] | 'all' {
  if (relation.replicaIdentity === 'f') return 'all';
  if (relation.replicaIdentity === 'i') return relation.identityIndex;
  if (relation.replicaIdentity === 'n') return [];
  return relation.primaryKey;
}

/**
 * The relations whose changes are the table's: a partitioned table's are its partitions', each
 * with its own replica identity (PostgreSQL does not pass the table's down); another table's are
 * its own (its inheritance children are not read).
 */
function publishers(table: SourceTable): Publisher[] {
  // A foreign partition publishes nothing (refused apart: table-rules.ts).
  return table.partitioned ? table.descendants.filter((d) => !d.partitioned && !d.foreign) : [table];
}

const named = (relations: readonly Publisher[]) => relations.map((r) => `${r.schema}.${r.table}`).join(', ');

/**
 * Whether the changes of a mapped table can reach its target whole: updates and deletes name
 * their row by the old row's replica identity, which must hold every column the target is ordered
 * by (else a delete or a key change leaves the old row in the target), and PostgreSQL refuses the
 * user's own updates and deletes of a published table that has none. `changes`: the pipe follows
 * them (not replicationMode snapshot).
 */
export function identityProblems(
  table: SourceTable,
  mapping: TableMapping,
  at: string,
  changes: boolean,
): Problem[] {
  const name = `${table.schema}.${table.table}`;
  const problem = (message: string, field = 'sourceTable') => [{ path: `${at}.${field}`, message }];
  const relations = publishers(table);
  const alter = (what: string) =>
    table.partitioned
      ? `ALTER TABLE ... ${what} on each of them`
      : `ALTER TABLE ${pgTable(table.schema, table.table)} ${what}`;
  const nothing = relations.filter((r) => r.replicaIdentity === 'n');
  if (changes && nothing.length > 0) {
    const which = table.partitioned ? `the partitions ${named(nothing)} of ${name} are` : `${name} is`;
    return problem(
      `${which} REPLICA IDENTITY NOTHING: once published, PostgreSQL refuses its updates and deletes; ${alter(table.primaryKey.length > 0 ? 'REPLICA IDENTITY DEFAULT (or FULL)' : 'REPLICA IDENTITY FULL')}`,
    );
  }
  if (table.primaryKey.length === 0) {
    const full = `ALTER TABLE ${pgTable(table.schema, table.table)} REPLICA IDENTITY FULL${table.partitioned ? ' and the same on each of its partitions' : ''}`;
    if (table.replicaIdentity !== 'f') return problem(`${name} has no primary key: add one, or ${full}`);
    const lacking = relations.filter((r) => r.replicaIdentity !== 'f');
    if (lacking.length === 0) return [];
    return problem(
      `${name} has no primary key and its partitions ${named(lacking)} are not REPLICA IDENTITY FULL: ALTER TABLE ... REPLICA IDENTITY FULL on each, or add a primary key`,
    );
  }
  // A snapshot alone has no updates or deletes to name a row by.
  if (!changes) return [];
  const custom = mapping.useCustomSortingKey === true;
  const keys = custom ? (mapping.sortingKeys ?? []) : table.primaryKey;
  const lackingOf = (relation: Publisher) => {
    const carried = carriedBy(relation);
    return carried === 'all' ? [] : keys.filter((key) => !carried.includes(key));
  };
  // A partitioned table without partitions yet: those made later carry its key.
  const keyed = relations.length > 0 ? relations : [{ ...table, replicaIdentity: 'd' }];
  const short = keyed.filter((r) => lackingOf(r).length > 0);
  if (short.length === 0) return [];
  const missing = [...new Set(short.flatMap(lackingOf))];
  const whose =
    table.partitioned && relations.length > 0
      ? `the replica identity of its partitions ${named(short)}`
      : 'its replica identity';
  return problem(
    `${missing.join(', ')} of ${name} ${custom ? 'order the target but are' : 'are'} not in ${whose}, so its updates and deletes would reach the target without them (the old row would stay): ${alter('REPLICA IDENTITY FULL')}`,
    custom ? 'sortingKeys' : 'sourceTable',
  );
}
