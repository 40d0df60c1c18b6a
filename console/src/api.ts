/**
 * The console's one way to the server: the same API a curl user calls, authenticated by the
 * session cookie (src/http/console-session.ts), with the session's CSRF token on every change.
 */

export interface Problem {
  path?: string;
  message: string;
}

/** An API answer that was not a success, with what the server said about it. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | undefined,
    readonly problems: Problem[],
    readonly body: unknown,
  ) {
    super(message);
  }

  /** The message for one field of a form (`source.kafka.brokers`), when the server named it. */
  forField(path: string): string | undefined {
    // A problem of an object (`source.postgres.credentials`) belongs beside each of its fields too.
    const related = (p: Problem) =>
      p.path !== undefined &&
      (p.path === path || p.path.startsWith(`${path}.`) || path.startsWith(`${p.path}.`));
    return this.problems.find(related)?.message;
  }
}

export interface Session {
  expiresAt: string;
  csrfToken: string;
  key: { id: string; organizationId: string; organizationName: string; role: Role; operator: boolean };
  alerts: { teamId: string; teamName: string; userId: string; userName: string } | null;
  alertsUnavailable?: string;
}

export type Role = 'read-only' | 'developer' | 'admin';

let csrfToken = '';

/** Set at sign-in and when the session is read: changes carry it in x-sluice-csrf. */
export function useCsrf(token: string): void {
  csrfToken = token;
}

/** Called when an answer says the session is gone (expired, signed out elsewhere, key revoked). */
let onSignedOut: () => void = () => undefined;
export function whenSignedOut(handler: () => void): void {
  onSignedOut = handler;
}

export async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  // Marked as the console's: a refused request is then answered without the Basic challenge that
  // would open the browser's password prompt (src/http/auth.ts).
  const headers: Record<string, string> = {
    accept: 'application/json',
    'x-requested-with': 'sluice-console',
  };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD') headers['x-sluice-csrf'] = csrfToken;
  const response = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  const parsed: unknown = text ? safeJson(text) : undefined;
  if (response.ok) return unwrap(parsed) as T;
  if (response.status === 401 && !path.startsWith('/console/session')) onSignedOut();
  throw errorOf(response.status, parsed);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** /v1 answers `{result}`, /api/v2 answers `{data}`. */
function unwrap(body: unknown): unknown {
  if (body && typeof body === 'object') {
    const record = body as Record<string, unknown>;
    if ('result' in record) return record.result;
    if ('data' in record) return record.data;
  }
  return body;
}

/**
 * /v1 errors read `{error: "BAD_REQUEST: a.b: what; c: what", code}`, /api/v2 ones `{message, code}`:
 * the status word goes, and each `path: message` part becomes a problem a form shows by its field.
 */
function errorOf(status: number, body: unknown): ApiError {
  const record = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const text =
    typeof record.error === 'string'
      ? record.error.replace(/^[A-Z_]+: /, '')
      : typeof record.message === 'string'
        ? // /api/v2 says which part broke the rules first: "Body validation failed: interval: Required".
          record.message.replace(/^(Body|Query|Params) validation failed: /, '')
        : `the server answered ${status}`;
  const code = typeof record.code === 'string' ? record.code : undefined;
  const problems =
    code === 'SLUICE_ERR_VALIDATION'
      ? text.split('; ').map((part) => {
          const match = /^([\w.[\]]+): (.*)$/s.exec(part);
          return match ? { path: match[1], message: match[2] ?? part } : { message: part };
        })
      : [];
  return new ApiError(status, text, code, problems, body);
}

export const api = {
  get: <T>(path: string) => request<T>('GET', path),
  post: <T>(path: string, body?: unknown) => request<T>('POST', path, body ?? {}),
  patch: <T>(path: string, body: unknown) => request<T>('PATCH', path, body),
  put: <T>(path: string, body: unknown) => request<T>('PUT', path, body),
  delete: <T>(path: string) => request<T>('DELETE', path),
};

export function mayChange(role: Role): boolean {
  return role === 'developer' || role === 'admin';
}
