import type { FastifyReply, FastifyRequest } from 'fastify';
import { ForbiddenError, NotFoundError, UnauthorizedError } from '../errors.js';
import {
  type ConsoleSessions,
  type IdentityService,
  isUuid,
  type KeyPrincipal,
  roleAtLeast,
} from '../identity/index.js';
import type { Role } from '../store/index.js';
import { type AuthFailureLimiter, TooManyFailuresError } from './auth-failures.js';
import { cookieSession } from './session-cookie.js';

/** What /v1 and POST /console/session say of a key id and secret that do not authenticate. */
export const WRONG_KEY = 'the API key id or secret is wrong, or the key was revoked';

/** The `X-Requested-With` value the console sends with every request. */
const CONSOLE_REQUEST = 'sluice-console';

/** What /v1 says to a session cookie of no live session. */
const SESSION_OVER =
  'the console session is over (signed out, expired, or its API key was revoked): sign in again with POST /console/session, or send Authorization: Basic base64(<key id>:<key secret>)';

/** What a /v1 route asks of its caller, set in the route's `config`. */
export interface AccessRule {
  /** The weakest role that may call the route. */
  role: Role;
  /**
   * An admin key of the operator organization may read another organization itself (its name);
   * nothing inside it (README, "Security": the operator creates an organization and hands its
   * first admin key over).
   */
  operatorMayCross?: boolean;
  /** Only admin keys of the operator organization may call the route. */
  operatorOnly?: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: KeyPrincipal;
  }
  interface FastifyContextConfig {
    access?: AccessRule;
  }
}

/**
 * The operator's rule, said where it applies: what an operator key may do in another organization
 * and what it may not (README, "Security"), and how to act inside it instead.
 */
function operatorStaysOut(organization: { id: string; name: string }): string {
  return `the operator organization's keys do not act inside other organizations (README, "Security"): in organization "${organization.name}" an operator key may only read the organization itself (GET /v1/organizations/${organization.id}); its services, keys, teams, tokens, pipes and SQL are refused. Use that organization's own admin key, shown once when it was created, or, with the server stopped, the CLI on the data directory`;
}

/** Parses `Authorization: Basic base64(keyId:secret)`; undefined when absent or malformed. */
export function parseBasic(header: string | undefined): { keyId: string; secret: string } | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return undefined;
  return { keyId: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
}

/**
 * The onRequest hook of /v1: HTTP Basic with an API key, or without an Authorization header the
 * console's session cookie as its key (src/http/session-cookie.ts); then the route's role, then the
 * organization in the path, which must be the key's own (another organization's objects are 404).
 *
 * A callback hook with a synchronous path for a key verified within the minute (the common case):
 * no promise, no store read. Everything else (a cookie, a key not seen lately, an operator reading
 * another organization) takes the asynchronous path, which decides exactly as before.
 */
export function basicAuth(
  identity: IdentityService,
  failures: AuthFailureLimiter,
  sessions: ConsoleSessions,
) {
  const slow = async (request: FastifyRequest, reply: FastifyReply) => {
    const principal =
      (await cookieSession(sessions, request, SESSION_OVER))?.key ??
      (await basicPrincipal(identity, failures, request, reply));
    request.principal = principal;
    await checkAccess(identity, principal, request);
  };
  return (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
    let principal: KeyPrincipal | undefined;
    try {
      principal = recentKey(identity, failures, request, reply);
      if (principal) {
        request.principal = principal;
        const pending = checkAccess(identity, principal, request);
        if (pending) pending.then(() => done(), done);
        else done();
        return;
      }
    } catch (error) {
      done(error as Error);
      return;
    }
    slow(request, reply).then(() => done(), done);
  };
}

/**
 * The key of an `Authorization: Basic` header verified within the minute, checked without waiting
 * (src/identity/verified-keys.ts); undefined when there is none (the slow path decides). An address
 * over its failure limit is refused here as on the slow path, before any secret is compared.
 */
function recentKey(
  identity: IdentityService,
  failures: AuthFailureLimiter,
  request: FastifyRequest,
  reply: FastifyReply,
): KeyPrincipal | undefined {
  const credentials = parseBasic(request.headers.authorization);
  if (!credentials) return undefined;
  admit(failures, request, reply);
  return identity.verifiedKeys.lookup(credentials.keyId, credentials.secret);
}

/**
 * The route's role, then the organization in the path; a promise only when an operator key
 * addresses another organization (its name is read for the message).
 */
function checkAccess(
  identity: IdentityService,
  principal: KeyPrincipal,
  request: FastifyRequest,
): Promise<void> | undefined {
  const rule = request.routeOptions.config.access ?? { role: 'admin' };
  if (rule.operatorOnly && !(principal.operator && principal.role === 'admin')) {
    throw new ForbiddenError('only an admin key of the operator organization may do this');
  }
  if (!roleAtLeast(principal.role, rule.role)) {
    throw new ForbiddenError(
      `this needs a key with role ${rule.role} or stronger; this key is ${principal.role}`,
    );
  }
  const organizationId = (request.params as { organizationId?: string }).organizationId;
  if (organizationId !== undefined && !isUuid(organizationId))
    throw new NotFoundError('SLUICE_ERR_ORGANIZATION_NOT_FOUND', 'organization');
  if (organizationId !== undefined && organizationId !== principal.organizationId) {
    const operatorAdmin = principal.operator && principal.role === 'admin';
    if (operatorAdmin && rule.operatorMayCross) return undefined;
    // An organization that does not exist is a 404 for the operator too.
    if (operatorAdmin)
      return identity.getOrganization(organizationId).then((organization) => {
        throw new ForbiddenError(operatorStaysOut(organization));
      });
    throw new NotFoundError('SLUICE_ERR_ORGANIZATION_NOT_FOUND', 'organization');
  }
  return undefined;
}

/** The key of an `Authorization: Basic` header; a 401 when absent or wrong. */
async function basicPrincipal(
  identity: IdentityService,
  failures: AuthFailureLimiter,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<KeyPrincipal> {
  const credentials = parseBasic(request.headers.authorization);
  const principal =
    credentials &&
    (await limited(failures, request, reply, () =>
      identity.authenticateKey(credentials.keyId, credentials.secret),
    ));
  if (principal) return principal;
  // Not for the console's own requests (console/src/api.ts marks them, as browsers' script
  // requests are conventionally marked): a Basic challenge makes a browser open its password
  // prompt over the page, where the console shows its own sign-in.
  if (request.headers['x-requested-with'] !== CONSOLE_REQUEST)
    reply.header('WWW-Authenticate', 'Basic realm="sluice", charset="UTF-8"');
  throw new UnauthorizedError(
    credentials ? WRONG_KEY : 'send Authorization: Basic base64(<key id>:<key secret>)',
  );
}

/**
 * Runs an authentication for the request's client address: refused (429, Retry-After) before it
 * runs when the address failed too often, and counted when it fails (auth-failures.ts).
 */
export async function limited<T>(
  failures: AuthFailureLimiter,
  request: FastifyRequest,
  reply: FastifyReply,
  authenticate: () => Promise<T | undefined>,
): Promise<T | undefined> {
  admit(failures, request, reply);
  const principal = await authenticate();
  if (principal === undefined) failures.failed(request.ip);
  return principal;
}

/** Refuses (429, Retry-After) an address that failed to authenticate too often. */
function admit(failures: AuthFailureLimiter, request: FastifyRequest, reply: FastifyReply): void {
  try {
    failures.admit(request.ip);
  } catch (error) {
    if (error instanceof TooManyFailuresError) reply.header('Retry-After', String(error.retryAfterSeconds));
    throw error;
  }
}

/** The caller of a /v1 route; the onRequest hook has set it before any handler runs. */
export function principalOf(request: FastifyRequest): KeyPrincipal {
  if (!request.principal) throw new UnauthorizedError();
  return request.principal;
}
