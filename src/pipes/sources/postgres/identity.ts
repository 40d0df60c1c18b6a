import type { Problem } from '../../../errors.js';
import type { SourceTable } from './catalog.js';
import { type PostgresSource, pgTable } from './connection.js';

type TableMapping = PostgresSource['tableMappings'][number];

/**
 * What an update's or a delete's old row carries at a table's replica identity: 'all' under
 * REPLICA IDENTITY FULL, else the primary key's or the identity index's columns. A partitioned
 * table's changes are its partitions', each with its own replica identity (PostgreSQL does not
 * pass the table's down): all only when every partition is FULL.
 */
function identityColumns(table: SourceTable): string[] | 'all' {
  if (table.partitioned) {
    const leaves = table.descendants.filter((d) => !d.partitioned);
    return leaves.length > 0 && leaves.every((d) => d.replicaIdentity === 'f') ? 'all' : table.primaryKey;
  }
  if (table.replicaIdentity === 'f') return 'all';
  if (table.replicaIdentity === 'i') return table.identityIndex;
  if (table.replicaIdentity === 'n') return [];
  return table.primaryKey;
}

/** Partitions of a partitioned table that are not REPLICA IDENTITY FULL. */
function partitionsNotFull(table: SourceTable): string[] {
  if (!table.partitioned) return [];
  return table.descendants.filter((d) => !d.partitioned && d.replicaIdentity !== 'f').map((d) => d.name);
}

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
  const quoted = pgTable(table.schema, table.table);
  const full = `ALTER TABLE ${quoted} REPLICA IDENTITY FULL${table.partitioned ? ' and the same on each of its partitions' : ''}`;
  if (changes && table.replicaIdentity === 'n' && !table.partitioned) {
    return [
      {
        path: `${at}.sourceTable`,
        message: `${name} is REPLICA IDENTITY NOTHING: once published, PostgreSQL refuses its updates and deletes; ALTER TABLE ${quoted} REPLICA IDENTITY DEFAULT (or FULL)`,
      },
    ];
  }
  if (table.primaryKey.length === 0) {
    if (table.replicaIdentity !== 'f')
      return [{ path: `${at}.sourceTable`, message: `${name} has no primary key: add one, or ${full}` }];
    const lacking = partitionsNotFull(table);
    if (lacking.length === 0) return [];
    return [
      {
        path: `${at}.sourceTable`,
        message: `${name} has no primary key and its partitions ${lacking.join(', ')} are not REPLICA IDENTITY FULL: ALTER TABLE ... REPLICA IDENTITY FULL on each, or add a primary key`,
      },
    ];
  }
  // A snapshot alone has no updates or deletes to name a row by.
  if (!changes) return [];
  const custom = mapping.useCustomSortingKey === true;
  const keys = custom ? (mapping.sortingKeys ?? []) : table.primaryKey;
  const carried = identityColumns(table);
  if (carried === 'all') return [];
  const missing = keys.filter((key) => !carried.includes(key));
  if (missing.length === 0) return [];
  return [
    {
      path: custom ? `${at}.sortingKeys` : `${at}.sourceTable`,
      message: `${missing.join(', ')} of ${name} ${custom ? 'order the target but are' : 'are'} not in its replica identity, so its updates and deletes would reach the target without them (the old row would stay): ${full}`,
    },
  ];
}
