import { createHash } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseBasic } from './auth.js';
import { sessionCookie } from './session-cookie.js';

/**
 * SLUICE_RATE_LIMIT requests per 10 s per API key, token or console session (0 = off). It runs before
 * authentication, so a flood of wrong secrets is held back before each costs a scrypt; it is keyed
 * by the key id or token the request claims together with the caller's address, so someone who
 * knows a key id (they are not secret) cannot lock its owner out from elsewhere.
 */
export async function installRateLimit(app: FastifyInstance, max: number): Promise<void> {
  if (max <= 0) return;
  await app.register(rateLimit, {
    max,
    timeWindow: 10_000,
    keyGenerator: rateLimitKey,
    allowList: (request) => request.url === '/health',
    errorResponseBuilder: (_request, context) => ({
      statusCode: 429,
      message: `more than ${context.max} requests in 10 s for this key; retry after ${Math.ceil(context.ttl / 1000)} s`,
    }),
  });
}

function rateLimitKey(request: FastifyRequest): string {
  const header = request.headers.authorization;
  const basic = parseBasic(header);
  if (basic) return `key:${basic.keyId}@${request.ip}`;
  if (header?.startsWith('Bearer '))
    return `token:${createHash('sha256').update(header).digest('base64url')}@${request.ip}`;
  const session = header === undefined ? sessionCookie(request) : undefined;
  if (session) return `session:${createHash('sha256').update(session).digest('base64url')}@${request.ip}`;
  return `ip:${request.ip}`;
}
