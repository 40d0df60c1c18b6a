import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createSluice, type Sluice, type SluiceOptions } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { Engine } from '../../src/engine/index.js';
import { createLogger } from '../../src/log.js';

export const BOOTSTRAP_KEY_ID = 'sk_test_admin';
export const BOOTSTRAP_KEY_SECRET = 'test-admin-secret-0123456789';
export const BOOTSTRAP_TOKEN = 'slt_test-token-0123456789abcdef';

export interface TestSluice {
  sluice: Sluice;
  dataDir: string;
  /** Every log line the server wrote, as text. */
  logs: string[];
  organizationId: string;
  serviceId: string;
  /** Basic auth header of the bootstrap admin key. */
  admin: string;
  pipesUrl: string;
  request(options: RequestOptions): Promise<TestResponse>;
  close(options?: { keepData?: boolean }): Promise<void>;
}

export interface RequestOptions {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  body?: unknown;
  /** Authorization header; defaults to the bootstrap admin key. `null` sends none. */
  auth?: string | null;
  headers?: Record<string, string>;
}

export interface TestResponse {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
  json: any;
}

export function basic(keyId: string, secret: string): string {
  return `Basic ${Buffer.from(`${keyId}:${secret}`).toString('base64')}`;
}

/**
 * A Sluice on a fresh (or given) data directory with known bootstrap credentials, called in
 * process through Fastify's inject: the whole HTTP stack without a socket.
 */
export async function startSluice(
  options: {
    dataDir?: string;
    databaseUrl?: string;
    env?: Record<string, string>;
    /** Run pipes; off for the control-plane tests, which check the API alone. */
    runtime?: boolean;
    /** The clock of alert evaluation; tests may also tick `sluice.evaluator` by hand. */
    clock?: () => Date;
    /**
     * Run the alert timer, as a user's server does (every SLUICE_ALERT_TICK_SECONDS, 1 s unless
     * given). Ticks never overlap and a window is evaluated once, so a test's own ticks stay exact.
     */
    alertTimer?: boolean;
    /** Level of the logs the test reads (`logs`); request lines are at debug. */
    logLevel?: 'info' | 'debug';
    /** The source kinds pipes may read (createSluice's `sourceKinds`): the registry's by default. */
    sourceKinds?: SluiceOptions['sourceKinds'];
  } = {},
): Promise<TestSluice> {
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'sluice-test-')));
  const config = loadConfig({
    SLUICE_DATA_DIR: dataDir,
    SLUICE_RATE_LIMIT: '0',
    // Tests send wrong credentials on purpose; the limit on failures has its own test.
    SLUICE_AUTH_FAILURES: '0',
    // The tests' S3, Azure and HTTP servers listen on loopback.
    SLUICE_ALLOW_PRIVATE_SOURCES: 'true',
    SLUICE_BOOTSTRAP_KEY_ID: BOOTSTRAP_KEY_ID,
    SLUICE_BOOTSTRAP_KEY_SECRET: BOOTSTRAP_KEY_SECRET,
    SLUICE_BOOTSTRAP_ACCESS_TOKEN: BOOTSTRAP_TOKEN,
    SLUICE_ALERT_TICK_SECONDS: '1',
    ...(options.databaseUrl ? { SLUICE_DATABASE_URL: options.databaseUrl } : {}),
    ...options.env,
  });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const sluice = await createSluice(config, {
    logger: createLogger(options.logLevel ?? 'info', sink),
    runtime: options.runtime ?? true,
    alertTimer: options.alertTimer ?? false,
    webhookBackoffMs: 50,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.sourceKinds ? { sourceKinds: options.sourceKinds } : {}),
  });
  const admin = basic(BOOTSTRAP_KEY_ID, BOOTSTRAP_KEY_SECRET);
  const request = async ({ method, url, body, auth, headers }: RequestOptions): Promise<TestResponse> => {
    const response = await sluice.server.inject({
      method,
      url,
      headers: {
        ...(auth === null ? {} : { authorization: auth ?? admin }),
        ...(body !== undefined && typeof body !== 'string' ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    let json: unknown;
    try {
      json = JSON.parse(response.body);
    } catch {
      json = undefined;
    }
    return { statusCode: response.statusCode, headers: response.headers, body: response.body, json };
  };
  const orgs = await request({ method: 'GET', url: '/v1/organizations' });
  const organizationId = orgs.json.result[0].id as string;
  const services = await request({ method: 'GET', url: `/v1/organizations/${organizationId}/services` });
  const serviceId = services.json.result[0].id as string;
  return {
    sluice,
    dataDir,
    logs,
    organizationId,
    serviceId,
    admin,
    pipesUrl: `/v1/organizations/${organizationId}/services/${serviceId}/pipes`,
    request,
    async close({ keepData = false } = {}) {
      await sluice.close();
      if (!keepData && !options.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A bearer token of a new team `team` of `s`'s organization, issued to `user`: a caller of
 * another team than the bootstrap token's.
 */
export async function teamToken(s: TestSluice, team: string, user: string): Promise<string> {
  const created = await s.request({
    method: 'POST',
    url: `/v1/organizations/${s.organizationId}/teams`,
    body: { name: team },
  });
  const token = await s.request({
    method: 'POST',
    url: `/v1/organizations/${s.organizationId}/teams/${created.json.result.id}/tokens`,
    body: { user },
  });
  return token.json.result.token as string;
}

/** The engine of `s`'s embedded service, as Sluice holds it (a test may watch its statements). */
export function serviceEngine(s: TestSluice): Engine {
  return s.sluice.engines.engineFor({ id: s.serviceId, organizationId: s.organizationId, kind: 'embedded' });
}
