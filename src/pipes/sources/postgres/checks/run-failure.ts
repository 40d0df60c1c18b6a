import { CodedError } from '../../../../errors.js';
import type { PipeConfig } from '../../../model.js';
import { PermanentError } from '../../../records/index.js';
import type { CleanupContext } from '../../contract.js';
import { type PostgresSource, SourceConnectError } from '../session/index.js';
import { checkedOn, sourceProblems } from './create-checks.js';

/** PostgreSQL's SQLSTATE insufficient_privilege: permission denied, must be owner, no REPLICATION. */
const INSUFFICIENT_PRIVILEGE = '42501';

/**
 * What a failed run of a database pipe means (README, "Pipe states"): the server refusing the
 * pipe's user a privilege (a grant revoked, a table's owner changed, since the create checks ran)
 * is not fixed by waiting, so it fails the pipe (a PermanentError) with what to grant, found by
 * the create checks on a session of their own; any other error is returned as it is (the pipe
 * is Degraded and tries again).
 */
export async function postgresRunFailure(
  error: unknown,
  config: PipeConfig,
  context: CleanupContext,
): Promise<unknown> {
  if (error instanceof PermanentError) return error;
  if (sqlStateOf(error) !== INSUFFICIENT_PRIVILEGE) {
    return pgConnectionLost(error)
      ? new CodedError('SLUICE_ERR_SOURCE_UNREACHABLE', error.message, { cause: error })
      : error;
  }
  const said = error instanceof Error ? error.message : String(error);
  const source = config.source.postgres as PostgresSource;
  const fixes = await checkedOn(source, context, (client) =>
    sourceProblems(client, source, context.pipeId),
  ).catch((failure: unknown) => {
    context.logger.warn(
      { pipeId: context.pipeId, err: failure },
      "could not check what the pipe's user lacks",
    );
    return [];
  });
  const needs =
    fixes.length > 0
      ? fixes.map((p) => `${p.path}: ${p.message}`).join('; ')
      : 'grant what README "How a PostgreSQL pipe runs" lists';
  return new PermanentError(
    'SLUICE_ERR_SOURCE_PRIVILEGE',
    `PostgreSQL refused the pipe's user (${said}): ${needs}; then start the pipe`,
    {
      cause: error,
    },
  );
}

/**
 * pg's own error when the server's connection ended under a query (the server stopped, the network
 * cut), also under the errors that wrap it (`cause`): a plain Error without a code, whose message
 * is the only signal, read here alone.
 */
function pgConnectionLost(error: unknown): error is Error {
  for (let at = error, depth = 0; at instanceof Error && depth < 5; at = at.cause, depth += 1) {
    if (/^Connection terminated/.test(at.message) && !(at as { code?: unknown }).code) return true;
  }
  return false;
}

/**
 * The server's SQLSTATE of a failed statement or of a refused session, also under the errors that
 * wrap it (`cause`); undefined for others.
 */
function sqlStateOf(error: unknown): string | undefined {
  for (let at = error, depth = 0; at && depth < 5; at = (at as Error).cause, depth += 1) {
    if (at instanceof SourceConnectError) return at.sqlState;
    const code = (at as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}
