import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TeamScope } from '../../alerts/index.js';
import { UnauthorizedError } from '../../errors.js';
import type { ConsoleSessions, IdentityService, TokenPrincipal } from '../../identity/index.js';
import { limited } from '../auth.js';
import type { AuthFailureLimiter } from '../auth-failures.js';
import { cookieSession } from '../session-cookie.js';

/** What /api/v2 says to a session cookie of no live session. */
const SESSION_OVER =
  'Unauthorized: the console session is over (signed out, expired, or its API key or access token was revoked): sign in again with POST /console/session, or send Authorization: Bearer <access token>';

/** What /api/v2 says to a live session that covers /v1 only. */
const SESSION_WITHOUT_USER =
  'Unauthorized: this console session has no user of a team (its key is not admin and no access token was given at sign-in): sign in again with an access token of your team too (accessToken), or with an admin key';

declare module 'fastify' {
  interface FastifyRequest {
    user?: TokenPrincipal;
  }
}

/**
 * The onRequest hook of /api/v2: `Authorization: Bearer <access token>` of a user of a team, or
 * without an Authorization header the console's session cookie as its team user
 * (src/http/session-cookie.ts).
 */
export function bearerAuth(
  identity: IdentityService,
  failures: AuthFailureLimiter,
  sessions: ConsoleSessions,
) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const session = await cookieSession(sessions, request, SESSION_OVER);
    if (session) {
      if (!session.user) throw new UnauthorizedError(SESSION_WITHOUT_USER);
      request.user = session.user;
      return;
    }
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
