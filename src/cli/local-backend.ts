import { type Core, openCore } from '../app.js';
import type { Config } from '../config.js';
import { readAllRows } from '../engine/index.js';
import { keyView, organizationView, serviceView, teamView, tokenView } from '../identity/index.js';
import { createLogger } from '../log.js';
import type { Backend, Row } from './backend.js';
import { bootstrapLines } from './serve.js';

/**
 * The CLI on the data directory itself, when no server holds it: the server's core (src/core.ts,
 * through src/app.ts) without its HTTP server, pipe runtime or timers. It takes the same lock a
 * server takes, so a server started meanwhile waits for nothing and corrupts nothing: it fails to
 * start. Acting on the directory is acting as its operator.
 */
export class LocalBackend implements Backend {
  private readonly identity: Core['identity'];

  private constructor(private readonly core: Core) {
    this.identity = core.identity;
  }

  static async open(config: Config): Promise<LocalBackend> {
    const core = await openCore(config, {
      logger: createLogger('warn', process.stderr, config.logFormat),
      // The CLI on an empty directory makes the first credentials; they must not vanish unseen.
      onBootstrap: (bootstrap) => console.error(bootstrapLines(bootstrap).join('\n')),
    });
    return new LocalBackend(core);
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
    readAllRows(await this.core.query.run({ organizationId: org, serviceId: service }, 'admin', { sql }));
  close = () => this.core.opened.close();
}
