import { join, resolve } from 'node:path';
import type { ErrorCode } from './errors.js';
import { type KillAt, parseKillAt } from './failpoints.js';

/**
 * One typed configuration from SLUICE_* variables and command-line flags, validated at start.
 * Flags win over variables; every bad value is reported at once so an operator fixes them together.
 */
export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** PostgreSQL URL for metadata; undefined means embedded PGlite under dataDir. */
  databaseUrl: string | undefined;
  /** 32-byte key (hex or base64) for secrets at rest; undefined means a key file in dataDir. */
  masterKey: string | undefined;
  logLevel: LogLevel;
  /** json, pretty (lines for a person), or auto: pretty on a terminal. */
  logFormat: LogFormat;
  /** Requests per 10 seconds per API key or token; 0 turns the limit off. */
  rateLimit: number;
  /** Failed authentications per minute per client address before 429s; 0 turns the limit off. */
  authFailuresPerMinute: number;
  /** How long a console sign-in session lives, in hours (absolute; README, "The console: sign-in sessions"). */
  consoleSessionHours: number;
  /** The most database services one organization may have. */
  servicesPerOrganization: number;
  /** Each service engine's memory in all, in MB: no statement lifts it. */
  engineMemoryMb: number;
  /** Longest a statement of a user (the query API) runs, in seconds: no setting lifts it. */
  queryTimeoutSeconds: number;
  /** Largest result of a user's statement (the query API), in MB: no setting lifts it. */
  queryResultMb: number;
  /** An engine process without a statement for this long stops (it starts again on the next); 0: never. */
  engineIdleSeconds: number;
  /** Days of pipe history each service keeps (README, "Pipe history"). */
  pipeHistoryDays: number;
  /** Each database service's disk quota in MB; 0: none. */
  serviceDiskMb: number;
  /** Largest request body accepted, in bytes. */
  bodyLimitBytes: number;
  /** Pipes may read from private, loopback and link-local addresses (off by default). */
  allowPrivateSources: boolean;
  /** Kafka pipes may talk to brokers without TLS (local networks, tests; off by default). */
  allowPlaintextKafka: boolean;
  /** This node's AWS region (AWS_REGION, else AWS_DEFAULT_REGION): MSK IAM tokens where the brokers' names do not say it. */
  awsRegion: string | undefined;
  /** While an alert stays ALERT, remind its webhook at most this often (ms); undefined: never. */
  alertReminderMs: number | undefined;
  /** Where users reach this server (links in notifications); else the listening address. */
  publicUrl: string | undefined;
  /** PEM files to serve HTTPS with (both or neither); SIGHUP reads them again. */
  tls: { certFile: string; keyFile: string } | undefined;
  /** Seconds between alert evaluation ticks. */
  alertTickSeconds: number;
  /** Webhooks may target private, loopback and link-local addresses (off by default). */
  allowPrivateWebhooks: boolean;
  /** The only directory `file://` pipe URLs may read; default `<dataDir>/files`. */
  localFilesDir: string;
  /**
   * `auto`: every engine process runs in bubblewrap's sandbox when it can start here (README,
   * "Security"); `off`: plain processes, the operator's explicit choice.
   */
  sandbox: SandboxSetting;
  /**
   * Without a sandbox, only the operator organization's SQL reaches an engine, unless the
   * operator accepts the risk with this (logged as a warning at every start).
   */
  allowUnsandboxedSql: boolean;
  /** Tests only: a batch step at which the process kills itself (SLUICE_TEST_KILL_AT, failpoints.ts). */
  testKillAt: KillAt | undefined;
  /** Tests only: how long a pipe goes without a batch before its stages go (SLUICE_TEST_IDLE_STAGES_MS, idle-stages.ts). */
  testIdleStagesMs: number | undefined;
  bootstrap: {
    keyId: string | undefined;
    keySecret: string | undefined;
    accessToken: string | undefined;
  };
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export const SANDBOX_SETTINGS = ['auto', 'off'] as const;
export type SandboxSetting = (typeof SANDBOX_SETTINGS)[number];
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Generous enough that nobody working locally meets it; still stops a runaway script. */
export const DEFAULT_RATE_LIMIT = 1000;
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

export class ConfigError extends Error {
  readonly code: ErrorCode = 'SLUICE_ERR_CONFIG';

  constructor(readonly problems: string[]) {
    // One problem is one line; several are a list, so an operator fixes them together.
    super(
      problems.length === 1
        ? `invalid configuration: ${problems[0]}`
        : `invalid configuration:\n  - ${problems.join('\n  - ')}`,
    );
  }
}

/** Flag names accepted by `sluice serve` and the variable each one overrides. */
export const CONFIG_FLAGS: Record<string, string> = {
  host: 'SLUICE_HOST',
  port: 'SLUICE_PORT',
  'data-dir': 'SLUICE_DATA_DIR',
  'database-url': 'SLUICE_DATABASE_URL',
  'master-key': 'SLUICE_MASTER_KEY',
  'log-level': 'SLUICE_LOG_LEVEL',
  'log-format': 'SLUICE_LOG_FORMAT',
  'rate-limit': 'SLUICE_RATE_LIMIT',
  'auth-failures': 'SLUICE_AUTH_FAILURES',
  'console-session-hours': 'SLUICE_CONSOLE_SESSION_HOURS',
  'services-per-organization': 'SLUICE_SERVICES_PER_ORGANIZATION',
  'engine-memory-mb': 'SLUICE_ENGINE_MEMORY_MB',
  'query-timeout': 'SLUICE_QUERY_TIMEOUT',
  'query-result-mb': 'SLUICE_QUERY_RESULT_MB',
  'engine-idle-seconds': 'SLUICE_ENGINE_IDLE_SECONDS',
  'pipe-history-days': 'SLUICE_PIPE_HISTORY_DAYS',
  'service-disk-mb': 'SLUICE_SERVICE_DISK_MB',
  'body-limit': 'SLUICE_BODY_LIMIT',
  'local-files-dir': 'SLUICE_LOCAL_FILES_DIR',
  'allow-private-webhooks': 'SLUICE_ALLOW_PRIVATE_WEBHOOKS',
  'alert-tick-seconds': 'SLUICE_ALERT_TICK_SECONDS',
  'allow-private-sources': 'SLUICE_ALLOW_PRIVATE_SOURCES',
  'allow-plaintext-kafka': 'SLUICE_ALLOW_PLAINTEXT_KAFKA',
  'alert-reminder': 'SLUICE_ALERT_REMINDER',
  'public-url': 'SLUICE_PUBLIC_URL',
  'tls-cert': 'SLUICE_TLS_CERT',
  'tls-key': 'SLUICE_TLS_KEY',
  sandbox: 'SLUICE_SANDBOX',
  'allow-unsandboxed-sql': 'SLUICE_ALLOW_UNSANDBOXED_SQL',
};

/**
 * The on/off settings: as flags they are switches (`--allow-private-sources` alone means true,
 * `--allow-private-sources=false` turns one off); as variables, `true` or `false`.
 */
export const SWITCH_FLAGS: readonly string[] = [
  'allow-private-webhooks',
  'allow-private-sources',
  'allow-plaintext-kafka',
  'allow-unsandboxed-sql',
];

export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  flags: Record<string, string | undefined> = {},
): Config {
  const problems: string[] = [];
  const value = (flag: string): string | undefined => {
    const variable = CONFIG_FLAGS[flag] ?? '';
    const raw = flags[flag] ?? env[variable];
    return raw === undefined || raw === '' ? undefined : raw;
  };
  const integer = (flag: string, fallback: number, min: number, max: number): number => {
    const raw = value(flag);
    if (raw === undefined) return fallback;
    const parsed = Number(raw);
    if (!Number.isInteger(parsed) || parsed < min || parsed > max) {
      problems.push(
        `${CONFIG_FLAGS[flag]} (--${flag}) must be an integer from ${min} to ${max}, got "${raw}"`,
      );
      return fallback;
    }
    return parsed;
  };
  // Hours may be fractional (0.5 is half an hour); the least is 3.6 s, enough for a test to outlive.
  const hours = (flag: string, fallback: number, min: number, max: number): number => {
    const raw = value(flag);
    if (raw === undefined) return fallback;
    const parsed = Number(raw);
    if (!/^\d+(\.\d+)?$/.test(raw) || parsed < min || parsed > max) {
      problems.push(
        `${CONFIG_FLAGS[flag]} (--${flag}) must be a number of hours from ${min} to ${max} (fractions allowed, like 0.5), got "${raw}"`,
      );
      return fallback;
    }
    return parsed;
  };

  const logLevel = (value('log-level') ?? 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    problems.push(
      `SLUICE_LOG_LEVEL (--log-level) must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`,
    );
  }
  const logFormat = (value('log-format') ?? 'auto') as LogFormat;
  if (!LOG_FORMATS.includes(logFormat)) {
    problems.push(
      `SLUICE_LOG_FORMAT (--log-format) must be one of ${LOG_FORMATS.join(', ')}, got "${logFormat}"`,
    );
  }
  const databaseUrl = value('database-url');
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('SLUICE_DATABASE_URL (--database-url) must be a postgres:// or postgresql:// URL');
  }
  const masterKey = value('master-key');
  if (masterKey !== undefined && parseMasterKey(masterKey) === undefined) {
    problems.push(
      'SLUICE_MASTER_KEY (--master-key) must be 32 bytes written as 64 hex characters or base64; make one with `openssl rand -hex 32`',
    );
  }
  const bootstrap = {
    keyId: env.SLUICE_BOOTSTRAP_KEY_ID || undefined,
    keySecret: env.SLUICE_BOOTSTRAP_KEY_SECRET || undefined,
    accessToken: env.SLUICE_BOOTSTRAP_ACCESS_TOKEN || undefined,
  };
  if ((bootstrap.keyId === undefined) !== (bootstrap.keySecret === undefined)) {
    problems.push('SLUICE_BOOTSTRAP_KEY_ID and SLUICE_BOOTSTRAP_KEY_SECRET must be set together');
  }
  if (bootstrap.keyId !== undefined && !/^[A-Za-z0-9_-]{4,64}$/.test(bootstrap.keyId)) {
    problems.push('SLUICE_BOOTSTRAP_KEY_ID must be 4 to 64 letters, digits, "_" or "-"');
  }
  if (bootstrap.keySecret !== undefined && bootstrap.keySecret.length < 16) {
    problems.push('SLUICE_BOOTSTRAP_KEY_SECRET must be at least 16 characters');
  }
  if (bootstrap.accessToken !== undefined && bootstrap.accessToken.length < 16) {
    problems.push('SLUICE_BOOTSTRAP_ACCESS_TOKEN must be at least 16 characters');
  }

  const boolean = (flag: string): boolean => {
    const raw = value(flag) ?? 'false';
    if (raw !== 'true' && raw !== 'false') {
      problems.push(`${CONFIG_FLAGS[flag]} (--${flag}) must be true or false, got "${raw}"`);
    }
    return raw === 'true';
  };
  const allowPrivateWebhooks = boolean('allow-private-webhooks');
  const allowPrivateSources = boolean('allow-private-sources');
  const allowPlaintextKafka = boolean('allow-plaintext-kafka');
  const reminder = value('alert-reminder');
  const reminderMatch = reminder === undefined ? undefined : /^(\d+)([mhd])$/.exec(reminder);
  if (reminder !== undefined && !reminderMatch) {
    problems.push(
      `SLUICE_ALERT_REMINDER (--alert-reminder) must be a duration like 30m, 4h or 1d, got "${reminder}"`,
    );
  }
  const unitMs: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };
  const alertReminderMs = reminderMatch
    ? Number(reminderMatch[1]) * (unitMs[reminderMatch[2] as string] ?? 0)
    : undefined;
  const publicUrl = value('public-url')?.replace(/\/+$/, '');
  if (publicUrl !== undefined && !/^https?:\/\/[^/\s]+(\/\S*)?$/.test(publicUrl)) {
    problems.push(`SLUICE_PUBLIC_URL (--public-url) must be an http(s) URL, got "${publicUrl}"`);
  }
  const [tlsCert, tlsKey] = [value('tls-cert'), value('tls-key')];
  if ((tlsCert === undefined) !== (tlsKey === undefined)) {
    problems.push(
      'SLUICE_TLS_CERT (--tls-cert) and SLUICE_TLS_KEY (--tls-key) go together: give both PEM files, or neither',
    );
  }
  const tls = tlsCert && tlsKey ? { certFile: resolve(tlsCert), keyFile: resolve(tlsKey) } : undefined;
  const sandbox = (value('sandbox') ?? 'auto') as SandboxSetting;
  if (!SANDBOX_SETTINGS.includes(sandbox))
    problems.push(
      `SLUICE_SANDBOX (--sandbox) must be one of ${SANDBOX_SETTINGS.join(', ')}, got "${sandbox}"`,
    );
  const allowUnsandboxedSql = boolean('allow-unsandboxed-sql');
  const dataDir = resolve(value('data-dir') ?? './data');
  const killAt = env.SLUICE_TEST_KILL_AT ? parseKillAt(env.SLUICE_TEST_KILL_AT) : undefined;
  if (typeof killAt === 'string') problems.push(killAt);
  const config: Config = {
    host: value('host') ?? '127.0.0.1',
    port: integer('port', 8080, 0, 65535),
    dataDir,
    allowPrivateWebhooks,
    allowPrivateSources,
    allowPlaintextKafka,
    awsRegion: env.AWS_REGION || env.AWS_DEFAULT_REGION || undefined,
    alertTickSeconds: integer('alert-tick-seconds', 60, 1, 86_400),
    alertReminderMs,
    publicUrl,
    tls,
    localFilesDir: resolve(value('local-files-dir') ?? join(dataDir, 'files')),
    databaseUrl,
    masterKey,
    logLevel,
    logFormat,
    rateLimit: integer('rate-limit', DEFAULT_RATE_LIMIT, 0, 1_000_000),
    authFailuresPerMinute: integer('auth-failures', 20, 0, 1_000_000),
    consoleSessionHours: hours('console-session-hours', 12, 0.001, 8760),
    servicesPerOrganization: integer('services-per-organization', 10, 1, 10_000),
    engineMemoryMb: integer('engine-memory-mb', 4096, 256, 1_048_576),
    queryTimeoutSeconds: integer('query-timeout', 30, 1, 86_400),
    queryResultMb: integer('query-result-mb', 1024, 1, 1_048_576),
    engineIdleSeconds: integer('engine-idle-seconds', 300, 0, 86_400 * 365),
    pipeHistoryDays: integer('pipe-history-days', 30, 1, 3650),
    serviceDiskMb: integer('service-disk-mb', 0, 0, 1024 * 1024 * 1024),
    bodyLimitBytes: integer('body-limit', DEFAULT_BODY_LIMIT_BYTES, 1024, 100 * 1024 * 1024),
    sandbox,
    allowUnsandboxedSql,
    testKillAt: typeof killAt === 'string' ? undefined : killAt,
    testIdleStagesMs: env.SLUICE_TEST_IDLE_STAGES_MS ? Number(env.SLUICE_TEST_IDLE_STAGES_MS) : undefined,
    bootstrap,
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** Reads a 32-byte key given as hex or base64; undefined when it is neither. */
export function parseMasterKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, 'hex');
  if (/^[A-Za-z0-9+/]{43}=?$/.test(trimmed)) {
    const bytes = Buffer.from(trimmed, 'base64');
    if (bytes.length === 32) return bytes;
  }
  return undefined;
}
