import { CodedError } from '../../../errors.js';
import { isTlsCode, NETWORK_CODES } from '../failure-code.js';
import { ROLE_REFUSED } from './msk-iam.js';

/** What @platformatic/kafka's errors say, through their nesting (MultipleErrors, causes). */
export function codesOf(error: unknown): string[] {
  return flatten(error).flatMap((e) => [e.code, e.cause?.code].filter((c): c is string => !!c));
}

export function messagesOf(error: unknown): string[] {
  return flatten(error)
    .flatMap((e) => [e.message, e.cause?.message])
    .filter((m): m is string => !!m && !/^Multiple errors|^Performing/.test(m));
}

/** The broker answered this error code (`OFFSET_OUT_OF_RANGE`, ...) somewhere in the response. */
export function brokerSaid(error: unknown, apiId: string): boolean {
  return flatten(error).some((e) => e.apiId === apiId);
}

interface ClientError {
  apiId?: string;
  code?: string;
  message?: string;
  errors?: ClientError[];
  cause?: ClientError;
}

function flatten(error: unknown): ClientError[] {
  const e = error as ClientError;
  if (!e || typeof e !== 'object') return [];
  return [e, ...(e.errors ?? []).flatMap(flatten), ...(e.cause ? flatten(e.cause) : [])];
}

/**
 * A refused OAUTHBEARER token (MSK IAM) ends the SASL exchange early: the broker then calls the
 * client's next request one "not valid given the current SASL state". The client gives that no
 * code of its own, so the broker's words are the only signal, read here alone.
 */
export function saslStateRefused(error: unknown): boolean {
  return messagesOf(error).some((m) => /SASL state|OAUTHBEARER token/i.test(m));
}

/**
 * What failed in the TLS handshake with the brokers: the message of the error that carries Node's
 * TLS code (CERT_*, ERR_TLS_*), or Node's words for a socket cut during the handshake (a plaintext
 * broker), which only say so in words under a plain ECONNRESET. Undefined when TLS did not fail.
 */
export function tlsFailureOf(error: unknown): string | undefined {
  const chain = flatten(error);
  const coded = chain.find((e) => typeof e.code === 'string' && isTlsCode(e.code));
  if (coded) return coded.message;
  return chain.find((e) => /before secure TLS connection was established/.test(e.message ?? ''))?.message;
}

/** The message of the first error in the chain with this code (our own errors' codes among them). */
export function messageWithCode(error: unknown, code: string): string | undefined {
  return flatten(error).find((e) => e.code === code)?.message;
}

/**
 * A failure of a running pipe's Kafka client, as its status shows it: what went wrong in words a
 * user acts on (the client's own errors name no secret), with the catalog's code (src/error-codes.ts)
 * read from the client's codes and Node's under them, never from their words.
 */
export function kafkaFailure(error: unknown): CodedError {
  const codes = codesOf(error);
  const detail = messagesOf(error).at(-1) ?? String(error);
  const role = messageWithCode(error, ROLE_REFUSED);
  if (role) return new CodedError(ROLE_REFUSED, `Kafka: ${role}`, { cause: error });
  if (codes.includes('PLT_KFK_AUTHENTICATION'))
    return new CodedError('SLUICE_ERR_SOURCE_AUTH_REFUSED', 'Kafka: the brokers refused the credentials', {
      cause: error,
    });
  if (codes.includes('PLT_KFK_NETWORK') || codes.some((code) => NETWORK_CODES.has(code))) {
    return new CodedError('SLUICE_ERR_SOURCE_UNREACHABLE', `Kafka: cannot reach the brokers (${detail})`, {
      cause: error,
    });
  }
  if (codes.some(isTlsCode))
    return new CodedError('SLUICE_ERR_SOURCE_TLS', `Kafka: TLS with the brokers failed (${detail})`, {
      cause: error,
    });
  return new CodedError('SLUICE_ERR_SOURCE', `Kafka: ${detail}`, { cause: error });
}
