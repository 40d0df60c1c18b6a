import type { ErrorCode } from '../../errors.js';

/**
 * The catalog code (src/error-codes.ts) of a source library's failure, read from the structured
 * fields the libraries set, never from their message text: Node's `code` (ECONNREFUSED, CERT_*),
 * PostgreSQL's SQLSTATE, the AWS SDK's `name` and `$metadata`, @platformatic/kafka's `PLT_KFK_*`,
 * Azure's `statusCode`. Undefined when no error in the chain (`cause`, `errors`) is a library's.
 */
export function libraryFailureCode(error: unknown): ErrorCode | undefined {
  for (const found of nestedErrors(error)) {
    const code = libraryCode(found);
    if (code) return code;
  }
  return undefined;
}

/** Node's codes of a network that did not carry the connection (undici's included). */
export const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
]);

/**
 * Node's codes of a TLS handshake that failed: OpenSSL's verify codes, Node's ERR_TLS_/ERR_SSL_,
 * and EPROTO, which Node gives OpenSSL's protocol errors (a server that answered without TLS).
 */
export function isTlsCode(code: string): boolean {
  return (
    /^(ERR_TLS_|ERR_SSL_|CERT_)/.test(code) ||
    [
      'EPROTO',
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'SELF_SIGNED_CERT_IN_CHAIN',
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      'UNABLE_TO_GET_ISSUER_CERT',
      'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
      'HOSTNAME_MISMATCH',
    ].includes(code)
  );
}

/** AWS error names of credentials refused (wrong, expired, or not allowed the call). */
const AWS_REFUSED = new Set([
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'AccessDeniedException',
  'AccessDenied',
  'NotAuthorized',
  'ExpiredTokenException',
  'SignatureDoesNotMatch',
  'InvalidClientTokenId',
  'InvalidAccessKeyId',
]);

interface LibraryError {
  code?: unknown;
  name?: unknown;
  $metadata?: unknown;
  statusCode?: unknown;
  cause?: unknown;
  errors?: unknown;
}

function libraryCode(error: LibraryError): ErrorCode | undefined {
  const code = typeof error.code === 'string' ? error.code : undefined;
  if (code && NETWORK_CODES.has(code)) return 'SLUICE_ERR_SOURCE_UNREACHABLE';
  if (code && isTlsCode(code)) return 'SLUICE_ERR_SOURCE_TLS';
  if (code === 'PLT_KFK_AUTHENTICATION') return 'SLUICE_ERR_SOURCE_AUTH_REFUSED';
  if (code === 'PLT_KFK_NETWORK') return 'SLUICE_ERR_SOURCE_UNREACHABLE';
  // SQLSTATE classes 28 (invalid authorization) and 08 (connection exception)...
  if (code && /^28[0-9A-Z]{3}$/.test(code)) return 'SLUICE_ERR_SOURCE_AUTH_REFUSED';
  // ... and 57P01-57P03: the server shuts down, or cannot take connections now.
  if (code && (/^08[0-9A-Z]{3}$/.test(code) || /^57P0[123]$/.test(code)))
    return 'SLUICE_ERR_SOURCE_UNREACHABLE';
  if (error.$metadata && typeof error.name === 'string') {
    return AWS_REFUSED.has(error.name) ? 'SLUICE_ERR_SOURCE_AUTH_REFUSED' : 'SLUICE_ERR_SOURCE';
  }
  if (error.name === 'RestError' && (error.statusCode === 401 || error.statusCode === 403))
    return 'SLUICE_ERR_SOURCE_AUTH_REFUSED';
  return undefined;
}

/** The error and those it wraps (`cause`, an aggregate's `errors`), outermost first. */
export function nestedErrors(error: unknown, depth = 0): LibraryError[] {
  if (!error || typeof error !== 'object' || depth > 5) return [];
  const e = error as LibraryError;
  const inner = Array.isArray(e.errors) ? e.errors : [];
  return [e, ...inner.flatMap((i) => nestedErrors(i, depth + 1)), ...nestedErrors(e.cause, depth + 1)];
}
