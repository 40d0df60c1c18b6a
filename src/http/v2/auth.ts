import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TeamScope } from '../../alerts/index.js';
import { UnauthorizedError } from '../../errors.js';
import type { IdentityService, TokenPrincipal } from '../../identity/index.js';
import { limited } from '../auth.js';
import type { AuthFailureLimiter } from '../auth-failures.js';

declare module 'fastify' {
  interface FastifyRequest {
    user?: TokenPrincipal;
  }
}

/** The onRequest hook of /api/v2: `Authorization: Bearer <access token>` of a user of a team. */
export function bearerAuth(identity: IdentityService, failures: AuthFailureLimiter) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    const token = match?.[1];
    const user = token
      ? await limited(failures, request, reply, () => identity.authenticateToken(token))
      : undefined;
    if (!user) {
      reply.header('WWW-Authenticate', 'Bearer realm="sluice"');
      // "Unauthorized" first, as the original API answers, then how to do it right.
      throw new UnauthorizedError(
        match
          ? 'Unauthorized: the access token is wrong or was revoked'
          : 'Unauthorized: send Authorization: Bearer <access token> (make one with POST /v1/organizations/{organizationId}/teams/{teamId}/tokens or `sluice tokens create --user <name>`)',
      );
    }
    request.user = user;
  };
}

export function scopeOf(request: FastifyRequest): TeamScope {
  const user = request.user;
  if (!user) throw new UnauthorizedError('Unauthorized');
  return { teamId: user.teamId, organizationId: user.organizationId, userId: user.userId };
}
