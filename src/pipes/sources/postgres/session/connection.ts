import { isIP } from 'node:net';
import { checkServerIdentity } from 'node:tls';
import pg from 'pg';
import type { Logger } from 'pino';
import { CodedError, type ErrorCode } from '../../../../errors.js';
import { privateHostProblem } from '../../../../net/index.js';
import type { PipeConfig } from '../../../model.js';
import { isTlsCode } from '../../failure-code.js';
import { sharedReadSocket } from './shared-read-socket.js';

export type PostgresSource = NonNullable<PipeConfig['source']['postgres']>;

/**
 * Every session Sluice opens speaks one text dialect, whatever the server's defaults: times in UTC
 * and ISO form, intervals as PostgreSQL writes them, floats with every digit, bytea in hex. The snapshot's COPY
 * and the replication stream's values then read the same in the engine.
 */
const SESSION_OPTIONS =
  '-c TimeZone=UTC -c DateStyle=ISO -c IntervalStyle=postgres -c extra_float_digits=3 -c bytea_output=hex';

/**
 * How long a query of a short-query session (metadata, checks, the snapshot's holder) may go
 * unanswered before the session is taken as lost. A server that vanished without a reset (a
 * dropped route, a failed-over address) would otherwise hold it until TCP gives up: about 15
 * minutes of retransmissions, or keepalive probes for about 11. Sessions whose one statement may
 * be long (a COPY, creating a slot) have none.
 */
export const QUERY_TIMEOUT_MS = 60_000;

/**
 * How long a session waits for a table's lock (another session's ALTER TABLE, VACUUM FULL, LOCK)
 * before its statement fails with LOCK_NOT_AVAILABLE: reading a table's size waits so, and a
 * range's COPY. The pipe then says so and tries again, and no session of it waits on unseen.
 * A COPY's wait is shorter than COPY_SILENCE_MS, which would end it from this side only.
 */
export const LOCK_TIMEOUT_MS = { short: 10_000, snapshot: 30_000 } as const;

export interface SessionOptions {
  replication?: boolean;
  /**
   * A session that reads the snapshot's ranges: its COPYs may run long (no query timeout; the
   * relay watches for silence instead, COPY_SILENCE_MS), and `pg_stat_activity` names it
   * `sluice snapshot`.
   */
  snapshot?: boolean;
}

/** The client settings of a source: its TLS options, its credentials, Sluice's session dialect. */
export function clientConfig(source: PostgresSource, options: SessionOptions = {}): pg.ClientConfig {
  const ssl = source.disableTls
    ? false
    : {
        rejectUnauthorized: source.skipCertVerification !== true,
        ...(source.caCertificate ? { ca: source.caCertificate } : {}),
        ...(source.tlsHost ? tlsHostOptions(source.tlsHost) : {}),
      };
  return {
    host: source.host,
    port: source.port,
    database: source.database,
    user: source.credentials?.username,
    password: source.credentials?.password,
    ssl,
    options: options.replication
      ? SESSION_OPTIONS
      : `${SESSION_OPTIONS} -c lock_timeout=${options.snapshot ? LOCK_TIMEOUT_MS.snapshot : LOCK_TIMEOUT_MS.short}`,
    application_name: options.snapshot ? 'sluice snapshot' : 'sluice',
    connectionTimeoutMillis: 10_000,
    // Probes start after 10 s of quiet (the OS default waits two hours) on a session that waits
    // to be sent something, as a COPY's reader does.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...(options.snapshot || options.replication ? {} : { query_timeout: QUERY_TIMEOUT_MS }),
    ...(options.replication ? { replication: 'database' } : {}),
    // TLS wraps the socket pg opens: only a plain one reads into the shared buffer.
    ...(ssl === false ? { stream: sharedReadSocket } : {}),
  };
}

/**
 * The certificate is checked against `tlsHost`, whatever `host` is: pg sets the TLS name to a
 * `host` that is a DNS name after taking ours, so the check is given the name itself. The name
 * is sent (SNI) too where pg leaves it, and never an address (RFC 6066 forbids one).
 */
function tlsHostOptions(tlsHost: string) {
  return {
    checkServerIdentity: (_host: string, certificate: Parameters<typeof checkServerIdentity>[1]) =>
      checkServerIdentity(tlsHost, certificate),
    ...(isIP(tlsHost) === 0 ? { servername: tlsHost } : {}),
  };
}

/** A connected client; the private-address rule of object storage holds for the host. */
export async function connect(
  source: PostgresSource,
  context: { allowPrivateSources: boolean; logger?: Logger },
  options: SessionOptions = {},
): Promise<pg.Client> {
  if (!context.allowPrivateSources) {
    const problem = await privateHostProblem(source.host, 'SLUICE_ALLOW_PRIVATE_SOURCES');
    if (problem) throw new SourceConnectError('host', problem);
  }
  const client = new pg.Client(clientConfig(source, options));
  // A connection that breaks later fails the query in flight; this keeps it from crashing Sluice.
  client.on('error', (error) =>
    context.logger?.debug({ err: error, host: source.host }, 'a PostgreSQL connection broke'),
  );
  try {
    await client.connect();
  } catch (error) {
    await closeClient(client, context.logger);
    throw connectError(error);
  }
  return client;
}

/** Ends a connection that is done with; one that cannot say goodbye (already broken) is logged. */
export async function closeClient(client: pg.Client, logger?: Logger): Promise<void> {
  await client
    .end()
    .catch((error: unknown) => logger?.debug({ err: error }, 'closing a PostgreSQL connection failed'));
}

type ConnectField = 'host' | 'port' | 'database' | 'credentials' | 'disableTls' | 'caCertificate' | 'tlsHost';

/** The catalog code (src/error-codes.ts) of each field a refused connection names. */
const CONNECT_CODES: Record<ConnectField, ErrorCode> = {
  host: 'SLUICE_ERR_SOURCE_UNREACHABLE',
  port: 'SLUICE_ERR_SOURCE_UNREACHABLE',
  database: 'SLUICE_ERR_SOURCE',
  credentials: 'SLUICE_ERR_SOURCE_AUTH_REFUSED',
  disableTls: 'SLUICE_ERR_SOURCE_TLS',
  caCertificate: 'SLUICE_ERR_SOURCE_TLS',
  tlsHost: 'SLUICE_ERR_SOURCE_TLS',
};

/** The server refused or could not be reached: names the field to fix. */
export class SourceConnectError extends Error {
  readonly code: ErrorCode;

  constructor(
    readonly field: ConnectField,
    message: string,
    /** The server's SQLSTATE, when it answered with one. */
    readonly sqlState?: string,
  ) {
    super(message);
    this.name = 'SourceConnectError';
    this.code = CONNECT_CODES[field];
  }
}

/**
 * pg's own error when the server answers the TLS request with "N": a plain Error whose message is
 * the only signal ("The server does not support SSL connections"), so it is read here alone.
 */
function isTlsRefusedByServer(message: string): boolean {
  return /does not support SSL/i.test(message);
}

function connectError(error: unknown): SourceConnectError {
  const code = (error as { code?: string }).code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === '28P01' || code === '28000') {
    return new SourceConnectError('credentials', `PostgreSQL refused the credentials: ${message}`);
  }
  if (code === '3D000') return new SourceConnectError('database', `PostgreSQL says: ${message}`);
  if (isTlsRefusedByServer(message)) {
    return new SourceConnectError(
      'disableTls',
      'the server does not accept TLS: set disableTls: true to connect without it',
    );
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return new SourceConnectError(
      'tlsHost',
      `the server's certificate is not for the name Sluice checked (${message}): set tlsHost to a name the certificate carries`,
    );
  }
  if (code && isTlsCode(code)) {
    return new SourceConnectError(
      'caCertificate',
      `the server's certificate is not trusted (${message}): give caCertificate, or skipCertVerification: true`,
    );
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new SourceConnectError('host', `the host is unknown: ${message}`);
  }
  if (code === 'ECONNREFUSED') {
    return new SourceConnectError('port', `nothing accepts connections there: ${message}`);
  }
  // Only the server's own codes: Node's (ETIMEDOUT, ...) are not SQLSTATEs.
  const sqlState = code && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
  return new SourceConnectError('host', `cannot connect: ${message}`, sqlState);
}

/** PostgreSQL's SQLSTATE for a lock not granted within lock_timeout. */
export const LOCK_NOT_AVAILABLE = '55P03';

/**
 * What a short-query session waited for when `error` ended the wait: a table's lock (past
 * LOCK_TIMEOUT_MS.short), the server's answer (past QUERY_TIMEOUT_MS: pg's own error); else
 * undefined.
 */
export function endedWait(error: unknown): 'lock' | 'answer' | undefined {
  if ((error as { code?: string }).code === LOCK_NOT_AVAILABLE) return 'lock';
  if (error instanceof Error && error.message === 'Query read timeout') return 'answer';
  return undefined;
}

/**
 * A short-query session's wait that ended (a lock not granted, a query not answered) as what a
 * pipe's state can say; undefined for any other error.
 */
export function waitEnded(error: unknown): Error | undefined {
  const wait = endedWait(error);
  if (wait === 'lock') {
    return new CodedError(
      'SLUICE_ERR_SOURCE_LOCKED',
      `PostgreSQL: a mapped table is locked by another session (waited ${LOCK_TIMEOUT_MS.short / 1000} s for it); the pipe tries again`,
      { cause: error },
    );
  }
  if (wait === 'answer') {
    return new CodedError(
      'SLUICE_ERR_SOURCE_UNREACHABLE',
      `PostgreSQL: the server did not answer the pipe's metadata session in ${QUERY_TIMEOUT_MS / 1000} s; the connection is taken as lost`,
      { cause: error },
    );
  }
  return undefined;
}

/** The server refused a session for its connection limits (max_connections, a role's or a database's CONNECTION LIMIT). */
export function tooManySessions(error: unknown): boolean {
  return error instanceof SourceConnectError && error.sqlState === TOO_MANY_CONNECTIONS;
}

const TOO_MANY_CONNECTIONS = '53300';

/** `"schema"."table"` for PostgreSQL. */
export function pgTable(schema: string, table: string): string {
  return `${pgIdent(schema)}.${pgIdent(table)}`;
}

export function pgIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export function pgLiteral(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}
