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
export { PostgresSource } from './config.js';
export { postgresConnector, postgresKind } from './kind.js';
/** The socket the snapshot reads with and its COPY relay; the benchmark's baseline uses them too. */
export { sharedReadSocket } from './session/index.js';
export { copyOut, copyToFile } from './snapshot/index.js';
export type { PostgresStatus } from './status-shape.js';
