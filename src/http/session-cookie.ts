import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { SluiceError, UnauthorizedError } from '../errors.js';
import type { ActiveSession, ConsoleSessions } from '../identity/index.js';

/** The header a cookie-authenticated change carries (README, "The console: sign-in sessions"). */
export const CSRF_HEADER = 'x-sluice-csrf';

declare module 'fastify' {
  interface FastifyInstance {
    sessionCookie: SessionCookie;
  }
}

/**
 * The console's session cookie. Where the browser reaches Sluice over HTTPS (Sluice serves TLS, or
 * SLUICE_PUBLIC_URL is https: a proxy ends TLS in front of it) it is `Secure` and named
 * `__Host-sluice_session`: browsers take a cookie of that name only from this very host over
 * HTTPS, with `Path=/`, so no sibling domain or plain-HTTP answer can plant one. A request with two
 * session cookies is refused rather than one of them chosen.
 */
export class SessionCookie {
  readonly name: string;

  constructor(readonly secure: boolean) {
    this.name = secure ? '__Host-sluice_session' : 'sluice_session';
  }

  /** The value the request carries, if any; two of them are a 401. */
  read(request: FastifyRequest): string | undefined {
    const values = (request.headers.cookie ?? '')
      .split(';')
      .map((part) => [part.slice(0, part.indexOf('=')).trim(), part.slice(part.indexOf('=') + 1).trim()])
      .filter(([name, value]) => name === this.name && value !== '')
      .map(([, value]) => value as string);
    if (values.length > 1) {
      throw new UnauthorizedError(
        `the request carries ${values.length} console session cookies: sign out and sign in again (POST /console/session)`,
      );
    }
    return values[0];
  }

  /** The Set-Cookie value of a session, or of its removal (`maxAge` 0). */
  header(value: string, maxAgeSeconds: number): string {
    const attributes = ['HttpOnly', 'SameSite=Strict', 'Path=/', `Max-Age=${maxAgeSeconds}`];
    if (this.secure) attributes.push('Secure');
    return [`${this.name}=${value}`, ...attributes].join('; ');
  }
}

/** Makes the session cookie of this server known to every route (request.server.sessionCookie). */
export function installSessionCookie(app: FastifyInstance, secure: boolean): void {
  app.decorate('sessionCookie', new SessionCookie(secure));
}

/** Methods that change nothing: a cookie-authenticated request of these needs no CSRF header. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** A cookie-authenticated change without the session's CSRF token, or from another origin. */
export class CsrfError extends SluiceError {
  constructor(message: string) {
    super('SLUICE_ERR_CSRF', 403, message);
  }
}

/** The value of the session cookie the request carries, if any. */
export function sessionCookie(request: FastifyRequest): string | undefined {
  return request.server.sessionCookie.read(request);
}

/** A session cookie authenticates only when no Authorization header is sent: that always wins. */
export function usesSessionCookie(request: FastifyRequest): boolean {
  return request.headers.authorization === undefined && sessionCookie(request) !== undefined;
}

/**
 * The live session a cookie-authenticated request acts as; undefined when the request sends
 * Authorization or no session cookie. A cookie of no live session is a 401 (not counted as a failed
 * authentication: a cookie is 256 random bits, and a console still holding one of an expired
 * session must not lock its address out of signing in again); a change without the session's CSRF
 * header, or from another origin, is a 403.
 */
export async function cookieSession(
  sessions: ConsoleSessions,
  request: FastifyRequest,
  over: string,
): Promise<ActiveSession | undefined> {
  if (!usesSessionCookie(request)) return undefined;
  const value = sessionCookie(request) as string;
  const session = await sessions.find(value);
  if (!session) throw new UnauthorizedError(over);
  checkCsrf(sessions, request, value);
  return session;
}

/** The CSRF rules of a cookie-authenticated request: its origin, and for a change its header. */
export function checkCsrf(sessions: ConsoleSessions, request: FastifyRequest, value: string): void {
  if (SAFE_METHODS.has(request.method)) return;
  refuseForeignOrigin(request);
  const sent = request.headers[CSRF_HEADER];
  const expected = Buffer.from(sessions.csrfToken(value));
  const given = Buffer.from(typeof sent === 'string' ? sent : '');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new CsrfError(
      `a change made with the console's session cookie needs the header ${CSRF_HEADER}: <csrfToken> (the csrfToken of POST or GET /console/session); ${sent === undefined ? 'none was sent' : "the one sent is not this session's"}`,
    );
  }
}

/**
 * Refuses a request whose Origin header names another host than its Host header: a page of another
 * site. Both are compared as URLs of the origin's scheme, so default ports compare equal.
 */
export function refuseForeignOrigin(request: FastifyRequest): void {
  const origin = request.headers.origin;
  if (origin === undefined) return;
  let same = false;
  try {
    const from = new URL(origin);
    same = from.host === new URL(`${from.protocol}//${request.headers.host ?? ''}`).host;
  } catch {
    same = false;
  }
  if (!same) {
    throw new CsrfError(
      `the request comes from the origin ${origin}, not from this server's (${request.headers.host ?? 'no Host header'}): the console's session works only from the pages this server serves`,
    );
  }
}
