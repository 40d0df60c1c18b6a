import { readFile } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { rootCertificates } from 'node:tls';
import type { ErrorCode } from '../errors.js';

export class CliError extends Error {
  /** SLUICE_ERR_CLI for the CLI's own conditions; the server's code for an error it relays. */
  constructor(
    message: string,
    readonly code: ErrorCode = 'SLUICE_ERR_CLI',
  ) {
    super(message);
  }
}

/** What the server answered: its status and its body's text. */
export interface Answer {
  status: number;
  text: string;
}

/**
 * One HTTP(S) client for the CLI. A private or self-signed server certificate is trusted through
 * --cacert (or SLUICE_CACERT), besides the usual authorities; every failure to reach the server
 * is a CliError of one line that says what to do.
 */
export class HttpClient {
  readonly base: URL;

  constructor(
    baseUrl: string,
    /** PEM certificates to trust besides Node's authorities (--cacert). */
    private readonly ca: string | undefined,
  ) {
    this.base = serverUrl(baseUrl);
  }

  send(method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
    const url = new URL(path, this.base);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const tls = this.ca === undefined ? {} : { ca: [...rootCertificates, this.ca] };
    return new Promise<Answer>((resolve, reject) => {
      const request = send(url, { method, headers, ...tls }, (response: IncomingMessage) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        response.on('error', reject);
      });
      request.on('error', (error) => reject(unreachable(this.base, error)));
      request.end(body);
    });
  }
}

function serverUrl(text: string): URL {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw new CliError(`--url: "${text}" is not an http(s) URL: give one like http://127.0.0.1:8080`);
  return url;
}

/** Certificate problems that trusting the right certificate (--cacert) solves. */
const UNTRUSTED = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_SIGNATURE_FAILURE',
]);

/** Why the server could not be reached, as one line that says what to do. */
function unreachable(base: URL, error: Error & { code?: string; reason?: string }): CliError {
  const at = `the Sluice server at ${base.origin}`;
  const code = error.code ?? '';
  if (UNTRUSTED.has(code))
    return new CliError(
      `${at} presented a certificate this machine does not trust (${code}): give that certificate, or the authority that signed it, with --cacert <file> or SLUICE_CACERT=<file>`,
    );
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return new CliError(
      `${at} presented a certificate that is not for ${base.hostname} (${error.reason ?? code}): use a --url with a name the certificate holds`,
    );
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID')
    return new CliError(`${at} presented a certificate that is not valid now (${code}): renew it`);
  if (code === 'ECONNREFUSED')
    return new CliError(
      `cannot reach ${at}: connection refused. Is it running (sluice serve, or npm start)? --url names another`,
    );
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return new CliError(`cannot reach ${at}: the name ${base.hostname} does not resolve (${code})`);
  if (code === 'EPROTO' && base.protocol === 'https:')
    return new CliError(`cannot reach ${at} over HTTPS (${error.message}): does it speak plain http://?`);
  if (code === 'ECONNRESET' && base.protocol === 'http:')
    return new CliError(`${at} closed the connection: if it serves HTTPS, use an https:// URL`);
  return new CliError(`cannot reach ${at}: ${code || error.message}`);
}

/** The PEM file --cacert (or SLUICE_CACERT) names, read and checked; undefined when neither is set. */
export async function readCaFile(flag: string | undefined, variable: string | undefined) {
  const file = flag ?? (variable || undefined);
  if (file === undefined) return undefined;
  const name = flag === undefined ? 'SLUICE_CACERT' : '--cacert';
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new CliError(`${name}: cannot read ${file} (${(error as NodeJS.ErrnoException).code})`);
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----'))
    throw new CliError(`${name}: ${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  return text;
}
