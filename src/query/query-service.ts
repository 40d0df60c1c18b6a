import {
  EngineError,
  type EngineRegistry,
  type QueryResult,
  statementProblem,
  UnreadableResultError,
} from '../engine/index.js';
import { BadRequestError } from '../errors.js';
import type { IdentityService } from '../identity/index.js';
import type { Role } from '../store/index.js';

/** Longest a query of the API may run in the engine. */
export const QUERY_TIMEOUT_MS = 30_000;
const MAX_SQL_LENGTH = 100_000;

/**
 * `POST .../services/{id}/query`: one statement on a service. Admin keys may run anything; other
 * keys run read-only (the engine refuses writes), all with a time limit.
 */
export class QueryService {
  constructor(
    private readonly identity: IdentityService,
    private readonly engines: EngineRegistry,
  ) {}

  async run(
    scope: { organizationId: string; serviceId: string },
    role: Role,
    body: unknown,
  ): Promise<QueryResult> {
    const sql = (body as { sql?: unknown } | undefined)?.sql;
    if (typeof sql !== 'string' || sql.trim() === '') {
      throw new BadRequestError('sql: Required: give one SQL statement as a string');
    }
    if (sql.length > MAX_SQL_LENGTH)
      throw new BadRequestError(`sql: Must be at most ${MAX_SQL_LENGTH} characters`);
    const refused = statementProblem(sql) ?? kindProblem(sql, role);
    if (refused) throw new BadRequestError(`sql: ${refused}`);
    const service = await this.identity.getService(scope.organizationId, scope.serviceId);
    try {
      // Admin statements run as written (an INSERT ... VALUES cannot take a trailing SETTINGS
      // clause); others run read-only with a time limit, which they cannot change (readonly = 1).
      const engine = this.engines.engineFor(service);
      return role === 'admin'
        ? await engine.query(sql)
        : await engine.query(sql, { readonly: true, timeoutMs: QUERY_TIMEOUT_MS });
    } catch (error) {
      // The engine's message is about the user's SQL (unknown table, syntax, read-only): a 400.
      if (
        error instanceof UnreadableResultError ||
        (error instanceof EngineError && error.code !== undefined)
      ) {
        throw new BadRequestError(`sql: ${error.message}`, { cause: error });
      }
      throw error;
    }
  }
}

/**
 * SET would change the engine session every pipe of the service runs in, so nobody may; keys that
 * are not admin keys run only statements that read.
 */
function kindProblem(sql: string, role: Role): string | undefined {
  const first = /^(?:\s|--[^\n]*\n|\/\*[\s\S]*?\*\/)*([A-Za-z]+)/.exec(sql)?.[1]?.toUpperCase();
  if (first === 'SET')
    return 'SET changes the session of every pipe of the service: put settings in a SETTINGS clause';
  if (
    role !== 'admin' &&
    !['SELECT', 'WITH', 'SHOW', 'DESCRIBE', 'DESC', 'EXISTS', 'EXPLAIN'].includes(first ?? '')
  ) {
    return 'this key may only read: SELECT, WITH, SHOW, DESCRIBE, EXISTS or EXPLAIN';
  }
  return undefined;
}
