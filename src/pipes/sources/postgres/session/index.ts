/**
 * Sessions with a PostgreSQL server: how Sluice connects (TLS, its session dialect, timeouts, the
 * shared read buffer), the waits and refusals a session meets, what the server is (its system
 * identifier, its limits) and may let the pipe's user do, and the names of what a pipe owns there.
 * Knows nothing of tables or pipes' progress.
 */
export {
  clientConfig,
  closeClient,
  connect,
  endedWait,
  LOCK_NOT_AVAILABLE,
  LOCK_TIMEOUT_MS,
  type PostgresSource,
  pgIdent,
  pgLiteral,
  pgTable,
  QUERY_TIMEOUT_MS,
  SourceConnectError,
  tooManySessions,
  waitEnded,
} from './connection.js';
export { LastHeard } from './last-heard.js';
export { ownedNames } from './owned-names.js';
export {
  type DataListener,
  type PgConnection,
  pgReaderOf,
  replicationSocketOf,
  sendQuery,
  socketOf,
} from './pg-internals.js';
export { publicationPrivilegeProblems } from './privileges.js';
export { systemIdentifier } from './server-identity.js';
export { limitProblems } from './server-limits.js';
export { lendReads, sharedReadSocket } from './shared-read-socket.js';
