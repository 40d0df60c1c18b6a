import {
  DiskQuotaError,
  ENGINE_CODES,
  EngineError,
  type EngineRegistry,
  type RowStream,
  statementProblem,
  UnreadableResultError,
} from '../engine/index.js';
import { BadRequestError } from '../errors.js';
import type { IdentityService } from '../identity/index.js';
import type { Role } from '../store/index.js';

const MAX_SQL_LENGTH = 100_000;

/** The engine refused what the statement reaches for (its grants: confinement.ts). */
const ACCESS_DENIED = 497;

/**
 * `POST .../services/{id}/query`: one statement, as the engine parses it, on a service. The engine
 * enforces the rest (README, "Security"): every statement runs on a connection of its own under the
 * service's confinement, admin keys' as written, other keys' read-only (`readonly = 1` given at
 * connect, which the statement cannot lift), all with a time limit (SLUICE_QUERY_TIMEOUT) that
 * no setting lifts either: a statement past it ends with its engine process (embedded-engine.ts).
 * Its rows come back as a stream (SLUICE_QUERY_RESULT_MB at most), never held whole.
 */
export class QueryService {
  constructor(
    private readonly identity: IdentityService,
    private readonly engines: EngineRegistry,
    private readonly limits: { timeoutMs: number; resultBytes: number },
  ) {}

  async run(
    scope: { organizationId: string; serviceId: string },
    role: Role,
    body: unknown,
  ): Promise<RowStream> {
    const sql = (body as { sql?: unknown } | undefined)?.sql;
    if (typeof sql !== 'string' || sql.trim() === '') {
      throw new BadRequestError(
        'SLUICE_ERR_SQL_INVALID',
        'sql: Required: give one SQL statement as a string',
      );
    }
    if (sql.length > MAX_SQL_LENGTH)
      throw new BadRequestError(
        'SLUICE_ERR_SQL_INVALID',
        `sql: Must be at most ${MAX_SQL_LENGTH} characters`,
      );
    const service = await this.identity.getService(scope.organizationId, scope.serviceId);
    const engine = this.engines.engineFor(service);
    const caller = role === 'admin' ? 'admin' : 'reader';
    const overQuota = await this.engines.checkDisk(service).then(
      () => undefined,
      (error: unknown) => {
        if (error instanceof DiskQuotaError) return error.message;
        throw error;
      },
    );
    const refused = await statementProblem(engine, sql, caller, overQuota);
    if (refused) throw new BadRequestError(refused.code, `sql: ${refused.message}`);
    try {
      return await engine.queryRows(sql, {
        caller,
        timeoutMs: this.limits.timeoutMs,
        maxBytes: this.limits.resultBytes,
      });
    } catch (error) {
      throw asUserError(error, role);
    }
  }
}

/** The engine's message is about the user's SQL (unknown table, syntax, read-only): a 400. */
function asUserError(error: unknown, role: Role): unknown {
  if (error instanceof UnreadableResultError)
    return new BadRequestError(error.condition, `sql: ${error.message}`, { cause: error });
  if (!(error instanceof EngineError) || error.code === undefined) return error;
  if (error.code === ENGINE_CODES.READONLY && role !== 'admin') {
    return new BadRequestError(
      'SLUICE_ERR_SQL_REFUSED',
      `sql: this key may only read (SELECT, WITH, SHOW, DESCRIBE, EXISTS, EXPLAIN) and change no setting (it is a ${role} key): ${error.message}`,
      { cause: error },
    );
  }
  if (error.code === ACCESS_DENIED) {
    return new BadRequestError(
      'SLUICE_ERR_SQL_REFUSED',
      `sql: not allowed on this service: it may not reach files of the host, the network, other databases or programs, nor manage the engine (${error.message})`,
      { cause: error },
    );
  }
  return new BadRequestError(error.condition, `sql: ${error.message}`, { cause: error });
}
