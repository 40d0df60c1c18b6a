import type { Duplex } from 'node:stream';
import type pg from 'pg';
import type { LogicalReplicationService } from 'pg-logical-replication';

/**
 * Every use Sluice makes of `pg` (and of pg-logical-replication) beyond their documented API sits
 * here, written against pg 8.23.1 and pg-logical-replication 2.5.0: pg-internals.test.ts fails
 * when the installed versions are others, and when the members read here are gone from a real
 * client. package.json pins both exactly: an update must pass that test (and
 * test/postgres-copy-relay.test.ts) before the versions here move.
 *
 * Why they are needed:
 * - The COPY relay (snapshot/copy-out.ts) reads a range's COPY from the socket itself, a chunk at
 *   a time, where a stream chunk per row (pg-copy-streams) costs about half as much CPU again
 *   (bench/postgres.ts). pg offers no hook for that: the relay takes the connection pg
 *   hands a Submittable (`client.query(submittable)` calls its `submit` with the client's
 *   private Connection), the Connection's socket (`stream`) and the one 'data' listener pg's
 *   protocol parser put on it, and sends its query with the Connection's own `query`.
 * - Closing a replication stream (changes/change-stream.ts) destroys the socket of the client
 *   pg-logical-replication opened (its private `_client`): a connection in COPY BOTH mode may wait
 *   on its goodbye, and the slot is free for the next stream only once its socket is gone.
 */
export const PG_VERSION = '8.23.1';
export const PG_LOGICAL_REPLICATION_VERSION = '2.5.0';

/** What pg hands a Submittable's `submit`: the client's Connection (pg/lib/connection.js). */
export type PgConnection = Pick<pg.Connection, 'stream' | 'query'>;

export type DataListener = (chunk: Buffer) => void;

/** The socket a connection reads and writes: the plain one, or the TLS one pg put over it. */
export function socketOf(connection: PgConnection): Duplex {
  return connection.stream;
}

/**
 * pg's reader of a connection's socket: the one 'data' listener its protocol parser attached
 * (pg-protocol's `parse`, from Connection's `attachListeners`). Undefined when the socket has not
 * exactly one, and the relay cannot tell which is pg's.
 */
export function pgReaderOf(socket: Duplex): DataListener | undefined {
  const listeners = socket.listeners('data') as DataListener[];
  return listeners.length === 1 ? listeners[0] : undefined;
}

/** Sends `text` as a simple Query message, as pg does for a query without parameters. */
export function sendQuery(connection: PgConnection, text: string): void {
  connection.query(text);
}

/** The socket of the client a replication service has open, undefined when it has none. */
export function replicationSocketOf(service: LogicalReplicationService): Duplex | undefined {
  const internal = service as unknown as { _client?: pg.Client | null };
  return internal._client?.connection?.stream;
}
