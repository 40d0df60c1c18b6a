import { openEngines, queryLimits } from '../app.js';
import type { Config } from '../config.js';
import { checkMasterKey, loadMasterKey, SecretBox } from '../crypto/index.js';
import { DataDirLock } from '../data-dir.js';
import { type EngineRegistry, readAllRows } from '../engine/index.js';
import {
  IdentityService,
  keyView,
  organizationView,
  serviceView,
  teamView,
  tokenView,
} from '../identity/index.js';
import { createLogger } from '../log.js';
import { QueryService } from '../query/index.js';
import { openStore, type Store } from '../store/index.js';
import type { Backend, Row } from './backend.js';
import { bootstrapLines } from './serve.js';

/**
 * The CLI on the data directory itself, when no server holds it. It takes the same lock a server
 * takes, so a server started meanwhile waits for nothing and corrupts nothing: it fails to start.
 * Acting on the directory is acting as its operator.
 */
export class LocalBackend implements Backend {
  private readonly engines: EngineRegistry;
  private readonly queries: QueryService;

  private constructor(
    private readonly store: Store,
    private readonly identity: IdentityService,
    private readonly lock: DataDirLock,
    engines: EngineRegistry,
    queryLimits: { timeoutMs: number; resultBytes: number },
  ) {
    this.engines = engines;
    this.queries = new QueryService(identity, this.engines, queryLimits);
  }

  static async open(config: Config): Promise<LocalBackend> {
    const lock = await DataDirLock.acquire(config.dataDir);
    let store: Store | undefined;
    try {
      const masterKey = await loadMasterKey(config.dataDir, config.masterKey);
      store = await openStore({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
      await checkMasterKey(new SecretBox(masterKey), store.repos.identity);
      const identity = new IdentityService(store, masterKey, config.servicesPerOrganization);
      const bootstrap = await identity.bootstrap(config.bootstrap);
      // The CLI on an empty directory makes the first credentials; they must not vanish unseen.
      if (bootstrap) console.error(bootstrapLines(bootstrap).join('\n'));
      const engines = await openEngines(
        config,
        store,
        createLogger('warn', process.stderr, config.logFormat),
      );
      return new LocalBackend(store, identity, lock, engines, queryLimits(config));
    } catch (error) {
      await store?.close();
      await lock.release();
      throw error;
    }
  }

  listOrganizations = async () =>
    (await this.identity.listOrganizations({ organizationId: '', operator: true })).map(organizationView);
  createOrganization = async (name: string): Promise<Row> => {
    const created = await this.identity.createOrganization({ name });
    return {
      organization: organizationView(created.organization),
      key: { ...keyView(created.key.key), secret: created.key.secret },
    };
  };
  listServices = async (org: string) => (await this.identity.listServices(org)).map(serviceView);
  createService = async (org: string, body: { name: string; kind?: string }) =>
    serviceView(await this.identity.createService(org, body));
  listKeys = async (org: string) => (await this.identity.listKeys(org)).map(keyView);
  createKey = async (org: string, body: { name?: string; role: string }) => {
    const created = await this.identity.createKey(org, body);
    return { ...keyView(created.key), secret: created.secret };
  };
  revokeKey = async (org: string, keyId: string) => keyView(await this.identity.revokeKey(org, keyId));
  listTeams = async (org: string) => (await this.identity.listTeams(org)).map(teamView);
  createTeam = async (org: string, name: string) => teamView(await this.identity.createTeam(org, { name }));
  listTokens = async (org: string, team: string) =>
    (await this.identity.listTokens(org, team)).map(tokenView);
  createToken = async (org: string, team: string, body: { user: string; name?: string }) => {
    const created = await this.identity.createToken(org, team, body);
    return { ...tokenView(created.token), token: created.value };
  };
  revokeToken = (org: string, team: string, tokenId: string) => this.identity.revokeToken(org, team, tokenId);
  query = async (org: string, service: string, sql: string) =>
    readAllRows(await this.queries.run({ organizationId: org, serviceId: service }, 'admin', { sql }));
  close = async () => {
    await this.engines.closeAll();
    await this.store.close();
    await this.lock.release();
  };
}
