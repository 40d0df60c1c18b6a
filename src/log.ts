import { createRequire } from 'node:module';
import pino, { type Logger } from 'pino';
import type PinoPretty from 'pino-pretty';
import type { LogFormat, LogLevel } from './config.js';

/**
 * Structured JSON logs. Request logs carry `requestId`; anything that looks like a credential is
 * censored wherever it appears, as a second line of defence behind never logging bodies.
 */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-sluice-csrf"]',
  'headers.authorization',
  // Credential-looking fields, at the top of a log line and one level down.
  ...['password', 'secret', 'secretKey', 'privateKey', 'connectionString', 'serviceAccountKey', 'token']
    .concat(['credentials', 'accessKey', 'keySecret', 'accessToken'])
    .flatMap((field) => [field, `*.${field}`]),
];

/**
 * JSON lines for machines, or lines a person reads on a terminal (pino-pretty, in this process: no
 * worker thread). `auto` picks the readable form when stdout is a terminal. Redaction happens
 * before either.
 */
export function createLogger(
  level: LogLevel,
  destination?: pino.DestinationStream,
  format: LogFormat = 'json',
): Logger {
  const readable = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  const out = readable
    ? prettyStream()({
        colorize: destination === undefined && process.stdout.isTTY === true,
        translateTime: 'SYS:HH:MM:ss.l',
        ignore: 'pid,hostname,service',
        singleLine: true,
        destination: destination ?? 1,
        sync: true,
      })
    : destination;
  return pino(
    { level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' }, base: { service: 'sluice' } },
    out,
  );
}

/** pino-pretty loads only when a person reads the logs: a server logging JSON never holds it. */
function prettyStream(): typeof PinoPretty {
  return createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
}
