import { CONFIG_FLAGS } from '../config.js';
import { flagSpelling } from './flags.js';

/** Each flag of `sluice serve`: its value's placeholder and what it sets (README, "Configuration"). */
const SERVE_FLAGS: Record<string, [placeholder: string, meaning: string]> = {
  host: ['<address>', 'address to listen on (127.0.0.1)'],
  port: ['<port>', 'port to listen on (8080; 0 picks a free one)'],
  'data-dir': ['<dir>', 'metadata, master key file and lock file (./data)'],
  'database-url': ['<postgres://...>', 'a PostgreSQL server for metadata (default: embedded PGlite)'],
  'master-key': ['<key>', 'the master key, 32 bytes as hex or base64 (default: <data dir>/master.key)'],
  'log-level': ['<level>', 'fatal, error, warn, info, debug, trace or silent (info)'],
  'log-format': ['<format>', 'json, pretty, or auto: pretty on a terminal (auto)'],
  'rate-limit': ['<n>', 'requests per 10 s per API key or token; 0 turns it off (1000)'],
  'auth-failures': ['<n>', 'failed authentications per minute per address before 429s; 0: off (20)'],
  'console-session-hours': ['<hours>', 'how long a console sign-in session lives; fractions allowed (12)'],
  'services-per-organization': ['<n>', 'the most database services one organization may have (10)'],
  'engine-memory-mb': ['<mb>', "each service's engine memory in all (4096)"],
  'query-timeout': ['<seconds>', "the longest a user's statement runs (30)"],
  'query-result-mb': ['<mb>', "the largest result of a user's statement (1024)"],
  'engine-idle-seconds': ['<seconds>', 'an engine process idle this long stops; 0: never (300)'],
  'service-disk-mb': ['<mb>', "each service's disk quota; 0: none (0)"],
  'body-limit': ['<bytes>', 'the largest request body (1048576)'],
  'local-files-dir': ['<dir>', 'the only directory file:// pipes read (<data dir>/files)'],
  'allow-private-webhooks': ['', 'webhooks may target private, loopback and link-local addresses'],
  'alert-tick-seconds': ['<seconds>', 'seconds between alert evaluations (60)'],
  'allow-private-sources': ['', 'pipes may read from private, loopback and link-local addresses'],
  'allow-plaintext-kafka': ['', 'Kafka pipes may reach plaintext:// brokers, without TLS'],
  'alert-reminder': ['<30m|4h|1d>', 'remind the webhook of an alert that stays ALERT this often'],
  'public-url': ['<url>', 'where users reach this server (the links of notifications)'],
  'tls-cert': ['<file>', 'PEM certificate chain: serve HTTPS (with --tls-key); SIGHUP reads it again'],
  'tls-key': ['<file>', 'the PEM key of --tls-cert'],
  sandbox: ['<auto|off>', "auto: engine processes run in bubblewrap's sandbox where it starts (auto)"],
  'allow-unsandboxed-sql': ['', "without a sandbox, every organization's SQL reaches the engines"],
};

/** `sluice serve --help`: every flag, its variable and its default. */
export function serveHelp(): string {
  const rows = Object.entries(CONFIG_FLAGS).map(([flag, variable]) => {
    const [placeholder, meaning] = SERVE_FLAGS[flag] ?? ['<value>', ''];
    return [flagSpelling(flag, placeholder), `${meaning} [${variable}]`] as const;
  });
  const width = Math.max(...rows.map(([spelling]) => spelling.length));
  return [
    'sluice serve [flags]',
    '',
    '  Runs the API and the pipe runtime on the data directory until SIGINT or SIGTERM (or until the',
    '  npm process that started it ends); SIGHUP reads the TLS files again. Each flag overrides its',
    '  SLUICE_* variable. A switch needs no value: --allow-private-sources turns it on,',
    '  --allow-private-sources=false off.',
    '',
    ...rows.map(([spelling, meaning]) => `  ${spelling.padEnd(width)}  ${meaning}`),
  ].join('\n');
}
