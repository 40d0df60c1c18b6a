import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { ServiceUnavailableError } from '../errors.js';

/**
 * The console's files, built from console/ by scripts/build-console.mjs into dist/console (the
 * same folder from src/ under the tests and from dist/ under npm start). Each is sent as the
 * gzip or brotli file beside it when the browser takes one; routes are made for the files that
 * exist at start, so nothing else under / is read from disk.
 */
export const CONSOLE_FILES = fileURLToPath(new URL('../../dist/console/', import.meta.url));

/**
 * The pages may load only the server's own script, styles and data: no inline script, no other
 * origin, no framing (README, "The console").
 */
const POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  // uPlot sizes its canvas and legend with style attributes.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

export async function consolePages(app: FastifyInstance, files = CONSOLE_FILES): Promise<void> {
  if (!existsSync(`${files}index.html`)) {
    app.get('/', { schema: { hide: true } }, async () => {
      throw new ServiceUnavailableError(
        'SLUICE_ERR_CONSOLE_NOT_BUILT',
        'the console is not built: run `npm run build` (npm ci and npm start build it)',
      );
    });
    return;
  }
  await app.register(fastifyStatic, {
    root: files,
    prefix: '/',
    wildcard: false,
    preCompressed: true,
    globIgnore: ['**/sizes.json'],
    schemaHide: true,
    setHeaders: (response) => {
      response.setHeader('content-security-policy', POLICY);
      response.setHeader('x-content-type-options', 'nosniff');
      response.setHeader('referrer-policy', 'no-referrer');
      // Not fingerprinted: the browser asks again each time, and an ETag makes that a 304.
      response.setHeader('cache-control', 'no-cache');
    },
  });
}
