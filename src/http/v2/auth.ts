import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TeamScope } from '../../alerts/index.js';
import { UnauthorizedError } from '../../errors.js';
import type { IdentityService, TokenPrincipal } from '../../identity/index.js';

declare module 'fastify' {
  interface FastifyRequest {
    user?: TokenPrincipal;
  }
}

/** The onRequest hook of /api/v2: `Authorization: Bearer <access token>` of a user of a team. */
export function bearerAuth(identity: IdentityService) {
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    const user = match?.[1] ? await identity.authenticateToken(match[1]) : undefined;
    if (!user) throw new UnauthorizedError('Unauthorized');
    request.user = user;
  };
}

export function scopeOf(request: FastifyRequest): TeamScope {
  const user = request.user;
  if (!user) throw new UnauthorizedError('Unauthorized');
  return { teamId: user.teamId, organizationId: user.organizationId, userId: user.userId };
}
