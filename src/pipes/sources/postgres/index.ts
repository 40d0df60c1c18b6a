import type {
  ChecksChanges,
  CleansUpOnDelete,
  ExplainsRunFailure,
  ReportsIdleStatus,
  ReportsStatus,
  SharesCdcCapacity,
  SourceConnector,
  WritesItsOwnTables,
} from '../contract.js';
import { changedPostgresProblems, postgresProblems, postgresRunFailure } from './checks/index.js';
import { dropOwned, idleStatus, PostgresRun } from './run/index.js';
import type { PostgresSource } from './session/index.js';
import { postgresStatusShape } from './status-shape.js';

export {
  discoverPostgres,
  type ListedTable,
  listPostgresTables,
  type PostgresConnection,
  type PostgresTables,
  type TableProblem,
} from './catalog/index.js';
/** LSN text (`16/B374D848`) as a number, as `/status` prints positions. */
export { parseLsn } from './changes/index.js';
/** The socket the snapshot reads with and its COPY relay; the benchmark's baseline uses them too. */
export { sharedReadSocket } from './session/index.js';
export { copyOut } from './snapshot/index.js';
export type { PostgresStatus } from './status-shape.js';

/** PostgreSQL: a parallel snapshot, then logical replication (README, "PostgreSQL pipes"). */
export const postgresConnector: SourceConnector &
  ChecksChanges &
  CleansUpOnDelete &
  ReportsIdleStatus &
  ExplainsRunFailure &
  ReportsStatus &
  WritesItsOwnTables &
  SharesCdcCapacity = {
  kind: 'postgres',
  virtualColumns: [],
  createProblems: postgresProblems,
  changedProblems: changedPostgresProblems,
  open: (context) => PostgresRun.open(context),
  async deleted(config, context) {
    const source = config.source.postgres as PostgresSource;
    const mode = source.settings?.replicationMode ?? 'cdc';
    if (mode !== 'snapshot') await dropOwned(source, context);
  },
  idleStatus,
  runFailure: postgresRunFailure,
  statusShape: postgresStatusShape,
  // Its tables are its table mappings, checked by postgresProblems.
  writesItsOwnTables: true,
  sharesCdcCapacity: true,
};
