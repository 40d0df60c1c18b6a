import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { credentialDigest } from '../crypto/index.js';
import { parseBasic } from './auth.js';

/**
 * SLUICE_RATE_LIMIT requests per 10 s per API key or token, and per address for the console's
 * session cookie and the rest (0 = off). One hook at the root, before any route's own: a flood of
 * wrong secrets or cookies is held back before each costs a scrypt or a lookup. It is keyed by the
 * key id or token the request claims together with the caller's address, so someone who knows a
 * key id (they are not secret) cannot lock its owner out from elsewhere; a cookie is not a key (a
 * client may send a new one each time), so cookies count by address.
 */
export async function installRateLimit(app: FastifyInstance, max: number): Promise<void> {
  if (max <= 0) return;
  await app.register(rateLimit, {
    global: false,
    max,
    timeWindow: 10_000,
    keyGenerator: rateLimitKey,
    allowList: (request) => request.url === '/health',
    errorResponseBuilder: (_request, context) => ({
      statusCode: 429,
      message: `more than ${context.max} requests in 10 s for this key; retry after ${Math.ceil(context.ttl / 1000)} s`,
    }),
  });
  app.addHook('onRequest', app.rateLimit());
}

function rateLimitKey(request: FastifyRequest): string {
  const header = request.headers.authorization;
  const basic = parseBasic(header);
  if (basic) return `key:${basic.keyId}@${request.ip}`;
  if (header?.startsWith('Bearer '))
    return `token:${credentialDigest(header).toString('base64url')}@${request.ip}`;
  return `ip:${request.ip}`;
}
