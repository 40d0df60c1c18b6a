import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type {
  AlertsService,
  DashboardsService,
  SourcesService,
  TileDataService,
  WebhookNotifier,
  WebhooksService,
} from '../alerts/index.js';
import type { SandboxStatus } from '../engine/index.js';
import type { ConsoleSessions, IdentityService } from '../identity/index.js';
import type { PipeHealth } from '../pipe-health/index.js';
import type { CdcScalingService, PipeDiscovery, PipesService } from '../pipes/index.js';
import type { QueryService } from '../query/index.js';
import type { Store } from '../store/index.js';
import { AuthFailureLimiter } from './auth-failures.js';
import { BodyTooDeepError, nestsDeeperThan } from './body-depth.js';
import { refuseNul } from './body-text.js';
import { consolePages } from './console-pages.js';
import { consoleSessionRoutes } from './console-session.js';
import { installErrorHandling } from './errors.js';
import { installHttpMetrics } from './metrics.js';
import { installOpenApi, openApiRoute } from './openapi.js';
import { installRateLimit } from './rate-limit.js';
import { lazyRequestLogger } from './request-logger.js';
import { installSessionCookie } from './session-cookie.js';
import type { TlsMaterial } from './tls.js';
import { v1Routes } from './v1/index.js';
import { v2Routes } from './v2/index.js';

export interface ServerDeps {
  logger: Logger;
  store: Store;
  identity: IdentityService;
  /** Browser sign-in sessions of the console: /console/session, and the cookie on /v1 and /api/v2. */
  consoleSessions: ConsoleSessions;
  pipes: PipesService;
  /** Health alerts asked for in a pipe's create body (README, "Pipe history"). */
  pipeHealth: PipeHealth;
  /** Reading sources before a pipe does, and the resources of a service's database pipes. */
  discovery: PipeDiscovery;
  cdcScaling: CdcScalingService;
  query: QueryService;
  alerts: AlertsService;
  webhooks: WebhooksService;
  sources: SourcesService;
  dashboards: DashboardsService;
  /** A tile's series for the console's charts, and a webhook's test send. */
  tileData: TileDataService;
  notifier: WebhookNotifier;
  metrics: Registry;
  /** Whether engine processes run sandboxed, and whose SQL reaches them (`/health` says). */
  sandbox: SandboxStatus & { tenantSql: string };
  rateLimit: number;
  /** Failed authentications per minute per client address before 429s (0: no limit). */
  authFailuresPerMinute: number;
  bodyLimitBytes: number;
  version: string;
  /** Serve HTTPS with this certificate and key. */
  tls?: TlsMaterial | undefined;
  /** Where browsers reach this server (SLUICE_PUBLIC_URL): https there makes the session cookie Secure. */
  publicUrl?: string | undefined;
}

export async function buildServer(deps: ServerDeps): Promise<FastifyInstance> {
  const app = Fastify({
    ...(deps.tls ? { https: { cert: deps.tls.cert, key: deps.tls.key } } : {}),
    loggerInstance: deps.logger as FastifyBaseLogger,
    genReqId: () => randomUUID(),
    // Request lines at debug level (SLUICE_LOG_LEVEL=debug asks for them), logged below.
    logController: new LogController({ requestIdLogLabel: 'requestId', disableRequestLogging: true }),
    childLoggerFactory: lazyRequestLogger,
    bodyLimit: deps.bodyLimitBytes,
    return503OnClosing: true,
  }) as unknown as FastifyInstance;
  // Domains validate what they are given themselves (bodies, query strings, ids), so schema
  // problems and rule problems come back together, each with its path, in the area's own words;
  // the routes' schemas document the contract in OpenAPI.
  app.setValidatorCompiler(() => () => true);
  // Every body is JSON; Fastify's default text/plain parser would let text through to a 400
  // where the truth is a 415.
  app.removeContentTypeParser('text/plain');
  // A DELETE has no body, but clients that set Content-Type: application/json on every request
  // (API SDKs, Terraform providers, curl lines copied from a POST) send it with an empty one:
  // that is no body, not a 400. An empty body of any other method is still refused.
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (request.method === 'DELETE' && body === '') return done(null, undefined);
    if (nestsDeeperThan(body as string)) return done(new BodyTooDeepError(), undefined);
    json(request, body as string, (error: Error | null, parsed?: unknown) => {
      if (error) return done(error, undefined);
      const refused = refuseNul(body as string, parsed);
      return refused ? done(refused, undefined) : done(null, parsed);
    });
  });
  // Set when the request arrives (a callback hook: no promise per request on the hot path).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  // One line per request, at debug level: a server's log is for what its pipes and alerts do. The
  // level is set once, at start (SLUICE_LOG_LEVEL), and no route has a level of its own, so at
  // info and above the hook is not installed rather than run for nothing on every request.
  if (deps.logger.isLevelEnabled('debug')) {
    app.addHook('onResponse', (request, reply, done) => {
      request.log.debug(
        { method: request.method, url: request.url, statusCode: reply.statusCode, ms: reply.elapsedTime },
        'request completed',
      );
      done();
    });
  }
  installErrorHandling(app);
  installSessionCookie(app, deps.tls !== undefined || deps.publicUrl?.startsWith('https:') === true);
  await installRateLimit(app, deps.rateLimit);
  await installOpenApi(app, deps.version);
  const authFailures = new AuthFailureLimiter(deps.authFailuresPerMinute);
  installHttpMetrics(app, deps.metrics, { identity: deps.identity, authFailures });
  app.get('/health', { schema: { hide: true } }, async (_request, reply) => {
    try {
      await deps.store.ping();
      return { status: 'ok', checks: { metadata: 'ok' }, sandbox: deps.sandbox };
    } catch {
      reply.code(503);
      return { status: 'unavailable', checks: { metadata: 'unreachable' }, sandbox: deps.sandbox };
    }
  });
  openApiRoute(app);
  await v1Routes(app, { ...deps, authFailures });
  await v2Routes(app, { ...deps, authFailures });
  consoleSessionRoutes(app, { ...deps, authFailures });
  await consolePages(app);
  return app;
}
