import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SluiceError, ValidationError } from '../errors.js';

/** The codes of the envelope for HTTP statuses that do not come from a domain error. */
const CODES: Record<number, string> = {
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

/**
 * Renders every error in the envelope of its area: `{status, error, requestId}` under /v1,
 * `{message}` under /api/v2. Unexpected errors are logged with their stack and answered with a
 * plain 500 that names only the request id, never the internals.
 */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ValidationError && request.url.startsWith('/api/v2')) {
      return send(request, reply, 400, error.code, `${error.part} validation failed: ${error.message}`);
    }
    if (error instanceof SluiceError) return send(request, reply, error.status, error.code, error.message);
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return send(request, reply, status, CODES[status] ?? 'BAD_REQUEST', frameworkMessage(error, request));
    }
    request.log.error({ err: error }, 'unexpected error');
    return send(
      request,
      reply,
      500,
      'INTERNAL_ERROR',
      `unexpected error; the server log has details under request id ${request.id}`,
    );
  });
  app.setNotFoundHandler((request, reply) =>
    send(request, reply, 404, 'NOT_FOUND', `no route for ${request.method} ${request.url.split('?')[0]}`),
  );
}

export function send(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  code: string,
  message: string,
) {
  reply.code(status);
  if (request.url.startsWith('/api/v2')) return reply.send({ message });
  return reply.send({ status, error: `${code}: ${message}`, requestId: request.id });
}
