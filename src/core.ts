import type { Logger } from 'pino';
import type { Config } from './config.js';
import { checkMasterKey, loadMasterKey, SecretBox } from './crypto/index.js';
import { DataDirLock } from './data-dir.js';
import { detectSandbox, EngineRegistry } from './engine/index.js';
import { type BootstrapResult, IdentityService } from './identity/index.js';
import { QueryService } from './query/index.js';
import { openStore, type Store } from './store/index.js';

/**
 * What was opened so far, closed last opened first. A start that fails half-way closes what it
 * opened (and logs a close that fails too, then throws the first error); a close closes all.
 */
export class Opened {
  private readonly closers: { what: string; close: () => Promise<void> }[] = [];

  constructor(private readonly logger?: Logger) {}

  add<T>(what: string, resource: T, close: (resource: T) => Promise<void>): T {
    this.closers.push({ what, close: () => close(resource) });
    return resource;
  }

  /** Closes everything, last opened first; every close is attempted, the first failure is thrown. */
  async close(): Promise<void> {
    let failure: { error: unknown } | undefined;
    for (const { what, close } of this.closers.splice(0).reverse()) {
      try {
        await close();
      } catch (error) {
        if (failure) this.logger?.error({ err: error }, `closing the ${what} failed too`);
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  }

  /** After a failed start: closes what was opened and throws the start's error. */
  async closeAfter(error: unknown): Promise<never> {
    await this.close().catch((closing: unknown) =>
      this.logger?.error({ err: closing }, 'closing what a failed start opened failed'),
    );
    throw error;
  }
}

/** The data directory held and its store open: what every process on the directory starts with. */
export interface HeldStore {
  lock: DataDirLock;
  masterKey: Buffer;
  store: Store;
  /** The lock and the store, to add more to and to close in reverse. */
  opened: Opened;
}

/**
 * The data directory's lock (a server or CLI started meanwhile fails to start), its master key,
 * its store. The key is made on an empty directory unless `readKey` says where it comes from (a
 * rotation reads the key in use and makes none); the key is read before the store opens, so a
 * directory without one gets no store either.
 */
export async function holdStore(
  config: Config,
  options: { logger?: Logger; readKey?: () => Promise<Buffer> } = {},
): Promise<HeldStore> {
  const { logger } = options;
  const opened = new Opened(logger);
  const lock = opened.add('data directory lock', await DataDirLock.acquire(config.dataDir), (held) =>
    held.release(),
  );
  try {
    const masterKey = await (options.readKey ?? (() => loadMasterKey(config.dataDir, config.masterKey)))();
    const store = await openStore({
      dataDir: config.dataDir,
      databaseUrl: config.databaseUrl,
      ...(logger && {
        onConnectionError: (error: Error) =>
          logger.warn(
            { err: error },
            'an idle metadata database connection failed; the next query reconnects',
          ),
      }),
    });
    opened.add('store', store, (open) => open.close());
    return { lock, masterKey, store, opened };
  } catch (error) {
    return opened.closeAfter(error);
  }
}

/** What the server and the CLI's offline commands both stand on (src/app.ts builds the server on it). */
export interface Core {
  lock: DataDirLock;
  store: Store;
  /** Keys the digests of access tokens and console sessions (src/identity/sessions.ts). */
  masterKey: Buffer;
  secretBox: SecretBox;
  identity: IdentityService;
  /** Set on the first start of an empty store: the credentials to print once. */
  bootstrap: BootstrapResult | undefined;
  engines: EngineRegistry;
  /** Whether engine processes run in the operating-system sandbox (README, "Security"). */
  sandbox: ReturnType<EngineRegistry['sandboxStatus']>;
  query: QueryService;
  /** The lock, the store and the engines, to add more to and to close in reverse. */
  opened: Opened;
}

export interface CoreOptions {
  logger: Logger;
  /** Called as soon as an empty store made its first credentials, before anything else can fail. */
  onBootstrap?: (bootstrap: BootstrapResult) => void;
}

/**
 * The one sequence that opens a data directory: lock, master key, store, the check that the key is
 * the store's, identity and its bootstrap, engines, queries. Anything failing closes what opened.
 */
export async function openCore(config: Config, options: CoreOptions): Promise<Core> {
  const { logger } = options;
  const { lock, masterKey, store, opened } = await holdStore(config, { logger });
  try {
    const secretBox = new SecretBox(masterKey);
    await checkMasterKey(secretBox, store.repos.identity);
    const identity = new IdentityService(store, masterKey, config.servicesPerOrganization);
    const bootstrap = await identity.bootstrap(config.bootstrap);
    if (bootstrap) options.onBootstrap?.(bootstrap);
    const engines = opened.add('engines', await openEngines(config, store, logger), (open) =>
      open.closeAll(),
    );
    const query = new QueryService(identity, engines, queryLimits(config));
    return {
      lock,
      store,
      masterKey,
      secretBox,
      identity,
      bootstrap,
      engines,
      sandbox: engines.sandboxStatus(),
      query,
      opened,
    };
  } catch (error) {
    return opened.closeAfter(error);
  }
}

/** What a user's statement may take (SLUICE_QUERY_TIMEOUT, SLUICE_QUERY_RESULT_MB). */
export function queryLimits(config: Config): { timeoutMs: number; resultBytes: number } {
  return { timeoutMs: config.queryTimeoutSeconds * 1000, resultBytes: config.queryResultMb * 1024 * 1024 };
}

/**
 * The engines, each process in the operating-system sandbox. Where the sandbox cannot start, the
 * start says so, and only the operator organization's SQL reaches an engine unless the operator
 * accepted the risk (README, "Security").
 */
export async function openEngines(config: Config, store: Store, logger: Logger): Promise<EngineRegistry> {
  const policy = await detectSandbox(config.sandbox);
  const options = {
    dataDir: config.dataDir,
    localFilesDir: config.localFilesDir,
    sandbox: policy,
    engineMemoryBytes: config.engineMemoryMb * 1024 * 1024,
    engineIdleMs: config.engineIdleSeconds * 1000,
    serviceDiskBytes: config.serviceDiskMb * 1024 * 1024,
    logger,
  };
  if (policy.kind === 'bwrap') return new EngineRegistry(options);
  if (config.allowUnsandboxedSql) {
    logger.warn(
      { sandbox: policy.reason },
      "engines run WITHOUT a sandbox and SLUICE_ALLOW_UNSANDBOXED_SQL=true: any organization's SQL can read the host's files (the master key among them) and reach its network",
    );
    return new EngineRegistry(options);
  }
  const operator = (await store.repos.identity.listOrganizations()).find((org) => org.operator);
  logger.warn(
    { sandbox: policy.reason },
    'engines run without a sandbox: only the operator organization\'s SQL reaches them; other organizations\' queries, expressions and pipes are refused (README, "Security")',
  );
  return new EngineRegistry({ ...options, onlyOrganization: operator?.id ?? '' });
}
