/**
 * Typed errors shared by every domain. Each carries a stable code of the catalog
 * (src/error-codes.ts); those a request can meet carry an HTTP status too, so the HTTP edge can
 * render the area's envelope without knowing which domain threw it (docs/architecture.md,
 * "Errors"; README, "Error codes").
 */
import { type ErrorCode, isErrorCode } from './error-codes.js';

export { ERROR_CODES, type ErrorCode, isErrorCode, isRetried, type PermanentCode } from './error-codes.js';

/** One problem with a request, named by the JSON path of the field it concerns. */
export interface Problem {
  path: string;
  message: string;
}

/** An error with the code of its condition (src/error-codes.ts). */
export class CodedError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The names the /v1 envelope's `error` text has always started with, by HTTP status. */
export const STATUS_NAMES: Record<number, string> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'TOO_MANY_REQUESTS',
  500: 'INTERNAL_ERROR',
  503: 'SERVICE_UNAVAILABLE',
};

export class SluiceError extends CodedError {
  /**
   * What the /v1 envelope's `error` text starts with: the status's name, as clients have matched
   * it since before codes (`BAD_REQUEST: ...`); errors that always named their condition keep it.
   */
  readonly label: string;

  constructor(
    code: ErrorCode,
    readonly status: number,
    message: string,
    options?: { cause?: unknown; label?: string },
  ) {
    super(code, message, options);
    this.label = options?.label ?? STATUS_NAMES[status] ?? code;
  }
}

export class ValidationError extends SluiceError {
  constructor(
    readonly problems: Problem[],
    /** Which part of the request broke the rules (the alerts area names it in its messages). */
    readonly part: 'Body' | 'Query' | 'Params' = 'Body',
  ) {
    super('SLUICE_ERR_VALIDATION', 400, problems.map(formatProblem).join('; '));
  }
}

export function formatProblem(problem: Problem): string {
  return problem.path ? `${problem.path}: ${problem.message}` : problem.message;
}

export class BadRequestError extends SluiceError {
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, 400, message, options);
  }
}

export class UnauthorizedError extends SluiceError {
  constructor(message = 'missing or invalid credentials') {
    super('SLUICE_ERR_UNAUTHENTICATED', 401, message);
  }
}

export class ForbiddenError extends SluiceError {
  constructor(message: string) {
    super('SLUICE_ERR_FORBIDDEN', 403, message);
  }
}

export class NotFoundError extends SluiceError {
  constructor(code: ErrorCode, what: string) {
    super(code, 404, `${what} not found`);
  }
}

export class ConflictError extends SluiceError {
  constructor(code: ErrorCode, message: string) {
    super(code, 409, message);
  }
}

/** Another object of the same kind already has the name. */
export class NameTakenError extends ConflictError {
  constructor(message: string) {
    super('SLUICE_ERR_NAME_TAKEN', message);
  }
}

/** What a request needs cannot answer now (a database service's engine starting); retrying may pass. */
export class ServiceUnavailableError extends SluiceError {
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, 503, message, options);
  }
}

/**
 * The catalog code of any thrown value: its own `code` (or an engine error's `condition`) when it
 * is one of the catalog's; undefined for anything else (a library's error, a bug), which the
 * caller names (failureCode in src/pipes/runtime/supervisor.ts; SLUICE_ERR_INTERNAL at the HTTP edge).
 */
export function codeOf(error: unknown): ErrorCode | undefined {
  if (!error || typeof error !== 'object') return undefined;
  const { code, condition } = error as { code?: unknown; condition?: unknown };
  if (isErrorCode(condition)) return condition;
  if (isErrorCode(code)) return code;
  return undefined;
}
