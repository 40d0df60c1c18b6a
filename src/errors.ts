/**
 * Typed errors shared by every domain. Each carries a stable code and an HTTP status so the HTTP
 * edge can render the area's envelope without knowing which domain threw it (docs/architecture.md, "Errors").
 */

/** One problem with a request, named by the JSON path of the field it concerns. */
export interface Problem {
  path: string;
  message: string;
}

export class SluiceError extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

export class ValidationError extends SluiceError {
  constructor(
    readonly problems: Problem[],
    /** Which part of the request broke the rules (the alerts area names it in its messages). */
    readonly part: 'Body' | 'Query' | 'Params' = 'Body',
  ) {
    super('BAD_REQUEST', 400, problems.map(formatProblem).join('; '));
  }
}

export function formatProblem(problem: Problem): string {
  return problem.path ? `${problem.path}: ${problem.message}` : problem.message;
}

export class BadRequestError extends SluiceError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('BAD_REQUEST', 400, message, options);
  }
}

export class UnauthorizedError extends SluiceError {
  constructor(message = 'missing or invalid credentials') {
    super('UNAUTHORIZED', 401, message);
  }
}

export class ForbiddenError extends SluiceError {
  constructor(message: string) {
    super('FORBIDDEN', 403, message);
  }
}

export class NotFoundError extends SluiceError {
  constructor(what: string) {
    super('NOT_FOUND', 404, `${what} not found`);
  }
}

export class ConflictError extends SluiceError {
  constructor(message: string) {
    super('CONFLICT', 409, message);
  }
}

/** What a request needs cannot answer now (a database service's engine starting); retrying may pass. */
export class ServiceUnavailableError extends SluiceError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('SERVICE_UNAVAILABLE', 503, message, options);
  }
}
