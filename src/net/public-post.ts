import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { publicOnlyLookup } from './private-address.js';

/**
 * One POST that, unless `allowPrivate`, connects only to public addresses: the address is checked
 * when the socket connects (publicOnlyLookup), so a name that resolves to a public address for a
 * check and to a private one for the request (DNS rebinding) is refused too. Redirects are not
 * followed; the answer's body is read and dropped. Resolves with the status.
 */
export function postPublic(
  url: URL,
  options: { headers: Record<string, string>; body: string; timeoutMs: number; allowPrivate: boolean },
): Promise<number> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const request = send(
      url,
      {
        method: 'POST',
        headers: { ...options.headers, 'content-length': Buffer.byteLength(options.body) },
        // The whole request's deadline, not only the socket's idle time.
        signal: AbortSignal.timeout(options.timeoutMs),
        ...(options.allowPrivate ? {} : { lookup: publicOnlyLookup }),
      },
      (response) => {
        response.on('data', () => undefined);
        response.on('end', () => resolve(response.statusCode ?? 0));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });
}
