import { Type as T } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { UnauthorizedError } from '../errors.js';
import {
  type ActiveSession,
  type ConsoleSessions,
  checkSignInBody,
  type IdentityService,
  TeamChoiceError,
} from '../identity/index.js';
import { limited, WRONG_KEY } from './auth.js';
import type { AuthFailureLimiter } from './auth-failures.js';
import { EmptyEnvelope, Envelope, ErrorEnvelope, ok, V1_ERRORS } from './envelope.js';
import { send } from './errors.js';
import { checkCsrf, refuseForeignOrigin, sessionCookie } from './session-cookie.js';

const SessionView = T.Object({
  expiresAt: T.String({ format: 'date-time' }),
  csrfToken: T.String({
    description: 'Send it as the x-sluice-csrf header with every change made with the cookie',
  }),
  key: T.Object({
    id: T.String(),
    organizationId: T.String(),
    organizationName: T.String(),
    role: T.String({ enum: ['admin', 'developer', 'read-only'] }),
    operator: T.Boolean(),
  }),
  alerts: T.Union([
    T.Object({ teamId: T.String(), teamName: T.String(), userId: T.String(), userName: T.String() }),
    T.Null(),
  ]),
  alertsUnavailable: T.Optional(T.String()),
});

const SignInBody = T.Object({
  keyId: T.String(),
  keySecret: T.String(),
  accessToken: T.Optional(T.String()),
  teamId: T.Optional(T.String()),
  user: T.Optional(T.String()),
});

/** The error envelope of a sign-in, with the teams to choose from when `teamId` is needed. */
const SignInError = T.Object({
  ...ErrorEnvelope.properties,
  problems: T.Optional(T.Array(T.Object({ path: T.String(), message: T.String() }))),
  teams: T.Optional(T.Array(T.Object({ id: T.String(), name: T.String() }))),
});

const NO_SESSION = 'no console session: sign in with POST /console/session';

/**
 * POST, GET and DELETE /console/session: the web console's sign-in (issue 38; README, "The
 * console: sign-in sessions"). Outside /v1 and /api/v2, answered in the /v1 envelope; hidden from
 * both areas' OpenAPI documents, which list only their own paths (src/http/openapi.ts).
 */
export function consoleSessionRoutes(
  app: FastifyInstance,
  deps: {
    identity: IdentityService;
    consoleSessions: ConsoleSessions;
    authFailures: AuthFailureLimiter;
  },
): void {
  const sessions = deps.consoleSessions;
  const tags = ['console'];

  app.post(
    '/console/session',
    {
      schema: {
        hide: true,
        tags,
        summary: 'Sign the console in: a session cookie for /v1 and, when allowed, /api/v2',
        body: SignInBody,
        response: {
          201: T.Object({ status: T.Integer({ const: 201 }), requestId: T.String(), result: SessionView }),
          ...V1_ERRORS,
          400: SignInError,
        },
      },
    },
    async (request, reply) => {
      refuseForeignOrigin(request);
      // The answer holds the CSRF token: never kept by a cache (GET's too).
      reply.header('cache-control', 'no-store');
      const previous = sessionCookieOrNone(request);
      const session = await signIn(deps, request, reply);
      if (!session) return reply;
      // A sign-in replaces the browser's session: the one it held ends now, not at its expiry.
      if (previous !== undefined) await sessions.signOut(previous);
      reply.header(
        'set-cookie',
        request.server.sessionCookie.header(session.value, sessions.secondsLeft(session.session)),
      );
      reply.code(201);
      return { status: 201, requestId: request.id, result: session.session.view };
    },
  );

  app.get(
    '/console/session',
    {
      schema: {
        hide: true,
        tags,
        summary: "The console's current session, or null when it has none",
        response: { 200: Envelope(T.Union([SessionView, T.Null()])), ...V1_ERRORS },
      },
    },
    // Not a 401 when there is none: the console asks this first on every load, and an error there
    // would be a failed request in every signed-out browser's console.
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      const value = sessionCookie(request);
      const session = value === undefined ? undefined : await sessions.find(value);
      if (session) return ok(request, session.view);
      // A cookie of a session that is over goes, so the browser stops sending it.
      if (value !== undefined) reply.header('set-cookie', request.server.sessionCookie.header('', 0));
      return ok(request, null);
    },
  );

  app.delete(
    '/console/session',
    {
      schema: {
        hide: true,
        tags,
        summary: 'Sign the console out (needs the x-sluice-csrf header)',
        response: { 200: EmptyEnvelope, ...V1_ERRORS },
      },
    },
    async (request, reply) => {
      const value = sessionCookie(request);
      if (value === undefined) throw new UnauthorizedError(NO_SESSION);
      // The CSRF token derives from the cookie alone: a session already over can be signed out too.
      checkCsrf(sessions, request, value);
      await sessions.signOut(value);
      reply.header('set-cookie', request.server.sessionCookie.header('', 0));
      return { status: 200, requestId: request.id };
    },
  );
}

/**
 * Checks the body, the key (as HTTP Basic is checked, counted by the same failure limiter) and the
 * access token if one was sent, then opens the session. Undefined when the reply was sent here (the
 * teams to choose from).
 */
async function signIn(
  deps: { identity: IdentityService; consoleSessions: ConsoleSessions; authFailures: AuthFailureLimiter },
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<{ value: string; session: ActiveSession } | undefined> {
  const body = checkSignInBody(request.body);
  const key = await limited(deps.authFailures, request, reply, () =>
    deps.identity.authenticateKey(body.keyId, body.keySecret),
  );
  if (!key) throw new UnauthorizedError(WRONG_KEY);
  const accessToken = body.accessToken;
  const token =
    accessToken === undefined
      ? undefined
      : await limited(deps.authFailures, request, reply, () => deps.identity.authenticateToken(accessToken));
  if (accessToken !== undefined && !token)
    throw new UnauthorizedError('accessToken: the access token is wrong or was revoked');
  try {
    return await deps.consoleSessions.signIn({ key, token, body });
  } catch (error) {
    if (!(error instanceof TeamChoiceError)) throw error;
    await send(request, reply, 400, error, { problems: error.problems, teams: error.teams });
    return undefined;
  }
}

/** The session cookie a request carries, or none (two of them count as none here). */
function sessionCookieOrNone(request: FastifyRequest): string | undefined {
  try {
    return sessionCookie(request);
  } catch (error) {
    request.log.debug({ err: error }, 'a sign-in with two session cookies: neither is signed out');
    return undefined;
  }
}
