import type { SourceConnector } from '../contract.js';
import { postgresProblems } from './checks.js';
import type { PostgresSource } from './connection.js';
import { idleStatus } from './idle.js';
import { changedPostgresProblems } from './moved.js';
import { PostgresRun } from './reader.js';
import { postgresRunFailure } from './refused.js';
import { dropOwned } from './setup.js';

/** The COPY relay and the socket the snapshot reads with; the benchmark's baseline uses them too. */
export { copyOut } from './copy-out.js';
export { discoverPostgres } from './discover.js';
/** LSN text (`16/B374D848`) as a number, as `/status` prints positions. */
export { parseLsn } from './lsn.js';
export { sharedReadSocket } from './socket.js';
export {
  type ListedTable,
  listPostgresTables,
  type PostgresConnection,
  type PostgresTables,
  type TableProblem,
} from './table-list.js';

/** PostgreSQL: a parallel snapshot, then logical replication (README, "PostgreSQL pipes"). */
export const postgresConnector: SourceConnector = {
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
};
