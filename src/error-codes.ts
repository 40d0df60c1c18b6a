/**
 * The catalog of error codes (issue 36): one stable code per condition, as Fastify names its
 * `FST_ERR_*`. Every error Sluice raises carries one (src/errors.ts), the API returns it as the
 * envelope's `code` (README, "Error codes"), a pipe's status as `lastErrorCode`, and the pipe runtime
 * decides from it alone whether a failed pipe retries (Degraded) or stops (Failed): `retry`.
 * A code, once released, is never renamed or given another meaning; add a new one instead.
 */
/** One condition: what it means, and whether the pipe runtime tries again (Degraded) or fails. */
const entry = <R extends boolean = false>(description: string, retry?: R) => ({
  description,
  retry: (retry ?? false) as R,
});

export const ERROR_CODES = {
  // The API: what a request asked.
  SLUICE_ERR_VALIDATION: entry('the request breaks the rules of its body, query or path'),
  SLUICE_ERR_BAD_REQUEST: entry('the request cannot be read (a framework error with no code of its own)'),
  SLUICE_ERR_INVALID_JSON: entry('the body is not valid JSON'),
  SLUICE_ERR_BODY_TOO_LARGE: entry('the body is larger than SLUICE_BODY_LIMIT'),
  SLUICE_ERR_BODY_DEPTH: entry('the body nests objects and arrays deeper than the API allows'),
  SLUICE_ERR_MEDIA_TYPE: entry('the body is not sent as application/json'),
  SLUICE_ERR_ROUTE_NOT_FOUND: entry('no route answers this method and path'),
  SLUICE_ERR_METHOD_NOT_ALLOWED: entry('the route does not take this method'),
  SLUICE_ERR_CONSOLE_NOT_BUILT: entry('the console was not built (npm run build builds it)'),
  SLUICE_ERR_RATE_LIMITED: entry('too many requests from this client; retry later', true),
  SLUICE_ERR_UNAUTHENTICATED: entry('no credentials, or credentials that are wrong or revoked'),
  SLUICE_ERR_AUTH_FAILURES: entry('too many failed authentications from one address; retry later', true),
  SLUICE_ERR_FORBIDDEN: entry('the credentials are valid but may not do this'),
  SLUICE_ERR_CSRF: entry(
    "a console session's change lacks its x-sluice-csrf header, or comes from another origin",
  ),
  // Retried: a pipe of another organization waits (Degraded) for a server restarted with the sandbox.
  SLUICE_ERR_UNSANDBOXED_SQL: entry("the engines run without a sandbox: only the operator's SQL runs", true),
  SLUICE_ERR_ORGANIZATION_NOT_FOUND: entry('no such organization for these credentials'),
  SLUICE_ERR_SERVICE_NOT_FOUND: entry('no such database service'),
  SLUICE_ERR_TEAM_NOT_FOUND: entry('no such team'),
  SLUICE_ERR_TOKEN_NOT_FOUND: entry('no such access token'),
  SLUICE_ERR_KEY_NOT_FOUND: entry('no such API key'),
  SLUICE_ERR_PIPE_NOT_FOUND: entry('no such pipe'),
  SLUICE_ERR_ALERT_NOT_FOUND: entry('no such alert'),
  SLUICE_ERR_WEBHOOK_NOT_FOUND: entry('no such webhook'),
  SLUICE_ERR_DASHBOARD_NOT_FOUND: entry('no such dashboard'),
  SLUICE_ERR_ALERT_SOURCE_NOT_FOUND: entry('no such alert source'),
  SLUICE_ERR_TILE_NOT_FOUND: entry('no such tile on the dashboard'),
  SLUICE_ERR_ALERT_TILE_GONE: entry(
    "an alert's tile is no longer on its dashboard: the alert cannot be evaluated",
  ),
  SLUICE_ERR_NAME_TAKEN: entry('another object of the same kind already has this name'),
  SLUICE_ERR_CHANGED_MEANWHILE: entry('the object changed while the request was checked: send it again'),
  SLUICE_ERR_WEBHOOK_IN_USE: entry('alerts still use the webhook'),
  SLUICE_ERR_PIPE_STATE: entry("the command does not apply in the pipe's state"),
  SLUICE_ERR_PIPE_IMMUTABLE: entry(
    'the pipe cannot change this (another kind, or a pipe that must be stopped)',
  ),
  SLUICE_ERR_PIPES_DISABLED: entry('this server runs no pipes'),
  SLUICE_ERR_SQL_INVALID: entry('the SQL statement is missing, too long, or the engine refused it'),
  SLUICE_ERR_SQL_REFUSED: entry(
    'the SQL statement does something its caller may not (write, reach the host)',
  ),
  SLUICE_ERR_NOT_PARSED: entry('the engine could not read a text as what it should be'),
  SLUICE_ERR_DISK_QUOTA: entry('the service is over its disk quota: pipes wait until it is under', true),
  SLUICE_ERR_DISCOVERY: entry('what discovery was asked to read cannot be read (the field is named)'),
  SLUICE_ERR_INTERNAL: entry('an unexpected error; the server log has its details', true),

  // The engine (EngineError keeps ClickHouse's numeric code beside these).
  SLUICE_ERR_ENGINE_UNAVAILABLE: entry(
    'the engine cannot run statements now (starting, or its data held)',
    true,
  ),
  SLUICE_ERR_STATEMENT_TIME_LIMIT: entry('a statement ran past its time limit', true),
  SLUICE_ERR_ENGINE: entry('the engine failed with a code that may pass on a retry, or none', true),
  SLUICE_ERR_ENGINE_DEFINITION: entry(
    "the engine refused the statement's SQL or what it names (syntax, type, right)",
  ),
  // Parts and records the engine cannot read are set aside before the runtime sees them; one that
  // reaches it is retried, as STD_EXCEPTION (1001) also carries failures that pass.
  SLUICE_ERR_ENGINE_BAD_DATA: entry(
    'the engine cannot read the data as declared (bytes, format, compression)',
    true,
  ),
  SLUICE_ERR_ENGINE_RESULT_FORMAT: entry(
    'the statement named a FORMAT of its own: results come back as JSON',
  ),

  // Pipes: the destination and the runtime.
  SLUICE_ERR_DESTINATION_MISSING: entry('the destination table does not exist'),
  SLUICE_ERR_DESTINATION_MISMATCH: entry(
    'the destination table no longer fits the pipe (engine, columns, types)',
  ),
  SLUICE_ERR_STAGED_COUNT: entry('the engine staged other counts than the batch read: nothing was moved'),
  SLUICE_ERR_UNSUPPORTED: entry('the pipe uses something Sluice does not support yet'),
  SLUICE_ERR_SOURCE_CONFIG: entry("the pipe's source settings cannot be used as they are"),
  SLUICE_ERR_PRIVATE_ADDRESS: entry('the source is at a private address, which this server refuses'),
  SLUICE_ERR_PLAINTEXT_REFUSED: entry('plaintext Kafka brokers are refused (SLUICE_ALLOW_PLAINTEXT_KAFKA)'),
  SLUICE_ERR_UNREADABLE_PART: entry(
    'a part of a batch the engine cannot read: set aside into the error table',
  ),
  SLUICE_ERR_READ_AGAIN: entry(
    "the service's engine refused a part it loaded itself: the batch is read again, through the source reader",
    true,
  ),
  SLUICE_ERR_BAD_RECORD: entry('a record that cannot be read: set aside into the error table'),

  // Pipes: the source.
  SLUICE_ERR_SOURCE_UNREACHABLE: entry('the source cannot be reached (DNS, refused, reset, timed out)', true),
  SLUICE_ERR_SOURCE_AUTH_REFUSED: entry('the source refused the credentials', true),
  SLUICE_ERR_SOURCE_ROLE_REFUSED: entry(
    "STS refused to assume the pipe's IAM role (trust policy, ExternalId)",
    true,
  ),
  SLUICE_ERR_MSK_IAM_ROLE: entry("the pipe's IAM role could not be assumed (trust policy, ExternalId)", true),
  SLUICE_ERR_SOURCE_TLS: entry(
    'TLS with the source failed (certificate not trusted, not for the name, no TLS)',
    true,
  ),
  SLUICE_ERR_SOURCE_PRIVILEGE: entry("the source refused the pipe's user a privilege it needs (a GRANT)"),
  SLUICE_ERR_SOURCE_SETUP: entry('the source lacks what the pipe needs (a publication, a slot, a setting)'),
  SLUICE_ERR_SOURCE_TABLE_GONE: entry('a source table the pipe reads was dropped or renamed'),
  SLUICE_ERR_SOURCE_SCHEMA_CHANGED: entry('a source column changed in a way the destination cannot follow'),
  SLUICE_ERR_SOURCE_REPLICA_IDENTITY: entry('changes of a table without a key came without their old row'),
  SLUICE_ERR_RESYNC_NEEDED: entry('the pipe must be resynced before it can go on'),
  SLUICE_ERR_SOURCE_DATA_EXPIRED: entry(
    'records were deleted at the source (retention) before the pipe read them; it goes on',
    true,
  ),
  SLUICE_ERR_SCHEMA_REGISTRY: entry(
    'the schema registry cannot be asked (unreachable, refused, nonsense)',
    true,
  ),
  SLUICE_ERR_SOURCE_LOCKED: entry('a source table is locked by another session: the pipe tries again', true),
  // Retried, as any unknown failure was before it had a code: a server may answer as expected again.
  SLUICE_ERR_SOURCE_PROTOCOL: entry(
    'the source answered in a form Sluice does not expect (not as PostgreSQL or pgoutput describe it)',
    true,
  ),
  SLUICE_ERR_SOURCE_CLEANUP: entry(
    'what a deleted pipe made at its source (a slot, a publication, a consumer) is not given back yet; tried again',
    true,
  ),
  SLUICE_ERR_SOURCE: entry('the source failed in a way that may pass', true),
  SLUICE_ERR_CURSOR_MOVED: entry(
    "the pipe's position moved under its run (another run claimed): the run starts again from the store's",
    true,
  ),

  // Alerts.
  SLUICE_ERR_LUCENE_SYNTAX: entry('a Lucene query that cannot be read'),
  SLUICE_ERR_WEBHOOK_DELIVERY: entry('a webhook did not accept a notification'),

  // The process: configuration and start.
  SLUICE_ERR_CONFIG: entry('the configuration (environment, flags) is invalid'),
  SLUICE_ERR_TLS_FILES: entry("the server's TLS certificate or key cannot be read"),
  SLUICE_ERR_MASTER_KEY_MISMATCH: entry('the master key does not open the secrets of the metadata store'),
  SLUICE_ERR_DATA_DIR_BUSY: entry('another Sluice process uses the data directory'),
  SLUICE_ERR_METADATA_STORE: entry('the metadata store cannot be created in the data directory'),
  SLUICE_ERR_SECRET_UNREADABLE: entry(
    'a secret of the metadata store does not open with the master key (damaged, moved, or sealed with another key)',
  ),
  SLUICE_ERR_CLI: entry('a command of the sluice CLI failed; its message says why'),
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Codes the runtime does not retry: what a PermanentError may carry. */
export type PermanentCode = {
  [C in ErrorCode]: (typeof ERROR_CODES)[C]['retry'] extends false ? C : never;
}[ErrorCode];

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}

/** Whether the pipe runtime retries a failure of this code (unknown codes: retried, as INTERNAL). */
export function isRetried(code: string): boolean {
  return isErrorCode(code) ? ERROR_CODES[code].retry : true;
}
