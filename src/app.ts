import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import {
  AlertEvaluator,
  AlertMetrics,
  AlertsService,
  DashboardsService,
  SourcesService,
  TileDataService,
  WebhookNotifier,
  WebhooksService,
} from './alerts/index.js';
import { type Config, ConfigError } from './config.js';
import { openCore } from './core.js';
import type { EngineRegistry, SandboxStatus } from './engine/index.js';
import {
  buildServer,
  createMetricsRegistry,
  readTls,
  TlsFilesError,
  type TlsMaterial,
} from './http/index.js';
import { type BootstrapResult, ConsoleSessions, type IdentityService } from './identity/index.js';
import { createLogger } from './log.js';
import { PipeHealth } from './pipe-health/index.js';
import {
  type AnySourceKind,
  CdcScalingService,
  ensureHistory,
  PIPE_HISTORY_SOURCE,
  PipeDiscovery,
  PipesService,
  SOURCE_KINDS,
  SourceKinds,
} from './pipes/index.js';
import { CdcCapacity, PipeSupervisor, registerPipeMetrics, SourceDiscovery } from './pipes/runtime/index.js';
import type { QueryService } from './query/index.js';
import type { Store } from './store/index.js';

// The CLI's offline commands stand on the same core as the server, through this root only.
export { type Core, holdStore, openCore } from './core.js';

export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** A running Sluice: the composition of store, domains and HTTP server over one data directory. */
export interface Sluice {
  config: Config;
  logger: Logger;
  store: Store;
  identity: IdentityService;
  /** Browser sign-in sessions of the console (README, "The console: sign-in sessions"). */
  consoleSessions: ConsoleSessions;
  pipes: PipesService;
  query: QueryService;
  engines: EngineRegistry;
  /** Whether engine processes run in the operating-system sandbox (README, "Security"). */
  sandbox: SandboxStatus;
  alerts: AlertsService;
  webhooks: WebhooksService;
  sources: SourcesService;
  dashboards: DashboardsService;
  evaluator: AlertEvaluator;
  notifier: WebhookNotifier;
  server: FastifyInstance;
  /** Set on the first start of an empty store: the credentials to print once. */
  bootstrap: BootstrapResult | undefined;
  /** Starts listening; returns the base URL. */
  listen(): Promise<string>;
  /**
   * Reads SLUICE_TLS_CERT and SLUICE_TLS_KEY again and serves new connections with them; open
   * connections keep theirs (SIGHUP). A file that cannot be read leaves the current ones in place.
   */
  reloadTls(): Promise<void>;
  close(): Promise<void>;
}

/** The composition root (docs/engine-sandbox.md for its engines): builds store, domains and server; runs nothing yet. */
export interface SluiceOptions {
  logger?: Logger;
  /**
   * Run pipes (default true). The control-plane tests turn it off to check the API alone; every
   * runtime test runs it.
   */
  runtime?: boolean;
  /** Evaluate alerts on a timer (default true); tests tick by hand with their own clock. */
  alertTimer?: boolean;
  /** The time now, for alert evaluation and console sessions' expiry; tests pass a clock they move. */
  clock?: () => Date;
  /** First delay between webhook attempts (tests shorten it). */
  webhookBackoffMs?: number;
  /**
   * The source kinds pipes may read (default: the registry's, sources/index.ts). Every schema of a
   * source, secret path and connector the server uses comes from these (docs/adding-a-source-kind.md).
   */
  sourceKinds?: readonly AnySourceKind[];
}

export async function createSluice(config: Config, options: SluiceOptions = {}): Promise<Sluice> {
  const logger = options.logger ?? createLogger(config.logLevel, undefined, config.logFormat);
  // Before anything opens: a certificate that cannot be read stops the start with its name.
  const tls = config.tls
    ? await readTls(config.tls).catch((error: Error) => {
        throw new ConfigError(error instanceof TlsFilesError ? error.problems : [error.message]);
      })
    : undefined;
  // Lock, master key, store, key check, identity, bootstrap, engines, queries (src/core.ts).
  const { store, masterKey, secretBox, identity, bootstrap, engines, sandbox, query, lock, opened } =
    await openCore(config, { logger });
  try {
    const kinds = new SourceKinds(options.sourceKinds ?? SOURCE_KINDS);
    const pipes = new PipesService(store, identity, secretBox, kinds, logger);
    const { discovery, cdcScaling, cdcCapacity } = discoveryServices(
      config,
      { store, identity, engines, logger, kinds },
      options,
    );
    const supervisor = new PipeSupervisor({
      store,
      pipes,
      engines,
      localFilesDir: config.localFilesDir,
      dataDir: config.dataDir,
      allowPrivateSources: config.allowPrivateSources,
      allowPlaintextKafka: config.allowPlaintextKafka,
      awsRegion: config.awsRegion,
      logger,
      killAt: config.testKillAt,
      idleStagesMs: config.testIdleStagesMs,
      pipeHistoryDays: config.pipeHistoryDays,
      cdcCapacity,
    });
    opened.add('pipe runtime', supervisor, (runtime) => runtime.close());
    if (options.runtime !== false) pipes.attachRuntime(supervisor);
    const alerts = new AlertsService(store);
    const webhooks = new WebhooksService(store, secretBox, config.allowPrivateWebhooks);
    // Each service's built-in source reads its pipes' history per minute (src/pipes/history).
    const sources = new SourcesService(store, identity, engines, {
      ...PIPE_HISTORY_SOURCE,
      prepare: (service) => ensureHistory(engines.engineFor(service), config.pipeHistoryDays),
    });
    const dashboards = new DashboardsService(store, sources);
    dashboards.onAlertsDeleted({ alertsDeleted: (ids) => alerts.forget(ids) });
    // Set once the server listens; notifications link to it unless SLUICE_PUBLIC_URL says otherwise.
    let listeningUrl = '';
    const metrics = createMetricsRegistry();
    registerPipeMetrics(
      metrics,
      store,
      kinds.connectors(),
      () => supervisor.sourceStatuses(),
      () => supervisor.idleSourceStatuses(),
    );
    const alertMetrics = new AlertMetrics(metrics);
    const evaluator = new AlertEvaluator({
      store,
      engines,
      identity,
      alerts,
      sources,
      logger,
      clock: options.clock ?? (() => new Date()),
      queryTimeoutMs: config.queryTimeoutSeconds * 1000,
      concurrency: 4,
      reminderMs: config.alertReminderMs,
      metrics: alertMetrics,
      baseUrl: () => config.publicUrl ?? listeningUrl,
    });
    const notifier = new WebhookNotifier({
      store,
      webhooks,
      logger,
      allowPrivate: config.allowPrivateWebhooks,
      clock: options.clock ?? (() => new Date()),
      ...(options.webhookBackoffMs === undefined ? {} : { backoffMs: options.webhookBackoffMs }),
      metrics: alertMetrics,
      baseUrl: () => config.publicUrl ?? listeningUrl,
    });
    // A tile's series for the console's charts, read with the evaluator's query (src/alerts/tile-data.ts).
    const tileData = new TileDataService({
      engines,
      identity,
      sources,
      dashboards,
      queryTimeoutMs: config.queryTimeoutSeconds * 1000,
      clock: options.clock ?? (() => new Date()),
    });
    const pipeHealth = new PipeHealth({ identity, webhooks, sources, dashboards, alerts });
    const consoleSessions = new ConsoleSessions(store, masterKey, {
      lifetimeMs: config.consoleSessionHours * 3_600_000,
      ...(options.clock && { clock: options.clock }),
    });
    const server = await buildServer({
      logger,
      store,
      identity,
      consoleSessions,
      pipes,
      pipeHealth,
      discovery,
      cdcScaling,
      query,
      alerts,
      webhooks,
      sources,
      dashboards,
      tileData,
      notifier,
      metrics,
      sandbox,
      rateLimit: config.rateLimit,
      authFailuresPerMinute: config.authFailuresPerMinute,
      bodyLimitBytes: config.bodyLimitBytes,
      version: VERSION,
      tls,
      publicUrl: config.publicUrl,
    });
    opened.add('HTTP server', server, (http) => http.close());
    if (options.runtime !== false) await supervisor.start();
    const ticker =
      options.alertTimer === false
        ? undefined
        : setInterval(
            () =>
              void evaluator
                .tick()
                .then(() => notifier.deliverDue())
                .catch((error: unknown) => logger.error({ err: error }, 'alert tick failed')),
            config.alertTickSeconds * 1000,
          );
    ticker?.unref();
    // Notifications decided before a stop or a crash are sent now.
    void notifier
      .deliverDue()
      .catch((error: unknown) => logger.error({ err: error }, 'sending notifications due at start failed'));
    return {
      config,
      logger,
      store,
      identity,
      consoleSessions,
      pipes,
      query,
      engines,
      sandbox,
      alerts,
      webhooks,
      sources,
      dashboards,
      evaluator,
      notifier,
      server,
      bootstrap,
      async reloadTls() {
        if (!config.tls) return;
        const fresh = await readTls(config.tls);
        (server.server as unknown as { setSecureContext(options: TlsMaterial): void }).setSecureContext(
          fresh,
        );
        logger.info(
          { cert: config.tls.certFile },
          'SIGHUP: TLS certificate and key reloaded for new connections (nothing else is read again)',
        );
      },
      async listen() {
        const address = await server.listen({ host: config.host, port: config.port });
        const url = address.replace('[::1]', 'localhost');
        listeningUrl = url;
        await lock.setUrl(url);
        return url;
      },
      async close() {
        if (ticker) clearInterval(ticker);
        await evaluator.idle();
        await notifier.idle();
        // The HTTP server, the pipe runtime, the engines, the store, the lock: last opened first.
        await opened.close();
      },
    };
  } catch (error) {
    return opened.closeAfter(error);
  }
}

/**
 * Reading sources before a pipe does (schema discovery, PostgreSQL tables) and the resources of a
 * service's database pipes (pipesCdcScaling), which bound its PostgreSQL pipes' batches in flight.
 * Sources are reached, and scaling applied, through the pipe runtime: only where it runs.
 */
function discoveryServices(
  config: Config,
  deps: {
    store: Store;
    identity: IdentityService;
    engines: EngineRegistry;
    logger: Logger;
    kinds: SourceKinds;
  },
  options: SluiceOptions,
) {
  const discovery = new PipeDiscovery(deps.identity, deps.kinds);
  const cdcScaling = new CdcScalingService(deps.store, deps.identity);
  const { store } = deps;
  const cdcCapacity = new CdcCapacity(
    async (serviceId) => (await store.repos.cdcScaling.get(serviceId))?.replicaCpuMillicores,
  );
  if (options.runtime !== false) {
    cdcScaling.attach(cdcCapacity);
    discovery.attach(
      new SourceDiscovery({
        engines: deps.engines,
        localFilesDir: config.localFilesDir,
        dataDir: config.dataDir,
        allowPrivateSources: config.allowPrivateSources,
        allowPlaintextKafka: config.allowPlaintextKafka,
        awsRegion: config.awsRegion,
        logger: deps.logger,
        kinds: deps.kinds,
      }),
    );
  }
  return { discovery, cdcScaling, cdcCapacity };
}
