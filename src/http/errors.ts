import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ErrorCode, SluiceError, STATUS_NAMES, ValidationError } from '../errors.js';

/** The catalog's codes (src/error-codes.ts) of the errors Fastify and its plugins raise. */
const FRAMEWORK_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'SLUICE_ERR_INVALID_JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'SLUICE_ERR_INVALID_JSON',
  FST_ERR_CTP_BODY_TOO_LARGE: 'SLUICE_ERR_BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'SLUICE_ERR_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'SLUICE_ERR_BAD_REQUEST',
  FST_ERR_VALIDATION: 'SLUICE_ERR_VALIDATION',
};

/** A framework error's code: the catalog's, else one by status (@fastify/rate-limit sets none). */
function frameworkCode(error: FastifyError, status: number): ErrorCode {
  const known = FRAMEWORK_CODES[error.code];
  if (known) return known;
  if (status === 429) return 'SLUICE_ERR_RATE_LIMITED';
  if (status === 404) return 'SLUICE_ERR_ROUTE_NOT_FOUND';
  if (status === 405) return 'SLUICE_ERR_METHOD_NOT_ALLOWED';
  return 'SLUICE_ERR_BAD_REQUEST';
}

/** Messages a user can act on for the errors Fastify raises before a handler runs. */
function frameworkMessage(error: FastifyError, request: FastifyRequest): string {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return `the body is not valid JSON: ${error.message.replace(/^Body is not valid JSON but content-type is set to 'application\/json'$/, 'fix the syntax')}`;
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'the body is larger than the server accepts (SLUICE_BODY_LIMIT); send a smaller body';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return `content type ${request.headers['content-type'] ?? '(none)'} is not supported: send Content-Type: application/json`;
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return 'the Content-Length header does not match the body';
    default:
      return error.message;
  }
}

/** The status of a request whose client closed the connection before the answer (nginx's). */
const CLIENT_CLOSED_REQUEST = 499;

/** Whether the request's client is gone: its connection closed before the answer was sent. */
function clientWentAway(request: FastifyRequest): boolean {
  // Not the request stream's own `destroyed`: Node sets it once the body was read, client or not.
  return request.raw.socket?.destroyed === true;
}

/**
 * Renders every error in the envelope of its area: `{status, error, code, requestId}` under /v1,
 * `{message, code}` under /api/v2 (README, "Error codes"). `code` is the condition's stable code
 * (src/error-codes.ts); `error` keeps the words it always had (`BAD_REQUEST: ...`), which clients
 * match. Unexpected errors are logged with their stack and answered with a plain 500 that names
 * only the request id, never the internals.
 */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ValidationError && request.url.startsWith('/api/v2')) {
      const message = `${error.part} validation failed: ${error.message}`;
      return send(request, reply, 400, { code: error.code, label: error.label, message });
    }
    if (error instanceof SluiceError) return send(request, reply, error.status, error);
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const code = frameworkCode(error, status);
      const label = STATUS_NAMES[status] ?? 'BAD_REQUEST';
      return send(request, reply, status, { code, label, message: frameworkMessage(error, request) });
    }
    if (clientWentAway(request)) {
      // Nothing reaches a client that closed its connection (a browser leaving the page while its
      // query ran): not a fault of the server's.
      request.log.info({ err: error }, 'the client closed the connection before the answer was sent');
      return reply.code(CLIENT_CLOSED_REQUEST).send();
    }
    request.log.error({ err: error }, 'unexpected error');
    return send(request, reply, 500, {
      code: 'SLUICE_ERR_INTERNAL',
      label: 'INTERNAL_ERROR',
      message: `unexpected error; the server log has details under request id ${request.id}`,
    });
  });
  app.setNotFoundHandler((request, reply) =>
    send(request, reply, 404, {
      code: 'SLUICE_ERR_ROUTE_NOT_FOUND',
      label: 'NOT_FOUND',
      message: `no route for ${request.method} ${request.url.split('?')[0]}`,
    }),
  );
}

/** What an error answer says: its code, the word its /v1 `error` text starts with, its message. */
export interface ErrorAnswer {
  code: ErrorCode;
  label: string;
  message: string;
}

/**
 * Sends an error in its area's envelope; `extra` adds machine-readable fields beside the envelope's
 * own (the teams a console sign-in may choose from, src/http/console-session.ts).
 */
export function send(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  answer: ErrorAnswer,
  extra: Record<string, unknown> = {},
) {
  reply.code(status);
  const { code, label, message } = answer;
  if (request.url.startsWith('/api/v2')) return reply.send({ ...extra, message, code });
  return reply.send({ ...extra, status, error: `${label}: ${message}`, code, requestId: request.id });
}
