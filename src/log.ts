import pino, { type Logger } from 'pino';
import type { LogLevel } from './config.js';

/**
 * Structured JSON logs. Request logs carry `requestId`; anything that looks like a credential is
 * censored wherever it appears, as a second line of defence behind never logging bodies.
 */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  '*.password',
  '*.secret',
  '*.secretKey',
  '*.privateKey',
  '*.connectionString',
  '*.serviceAccountKey',
  '*.token',
  '*.credentials',
  '*.accessKey',
];

export function createLogger(level: LogLevel, destination?: pino.DestinationStream): Logger {
  return pino(
    { level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' }, base: { service: 'sluice' } },
    destination,
  );
}
