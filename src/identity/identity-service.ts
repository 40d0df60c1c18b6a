import { randomBytes, randomUUID } from 'node:crypto';
import { hashSecret, randomSecret, tokenDigest, verifySecret } from '../crypto/index.js';
import { NameTakenError, NotFoundError, type Problem, ValidationError } from '../errors.js';
import {
  type AccessToken,
  type ApiKey,
  type Organization,
  ROLES,
  type Role,
  type Service,
  type Store,
  type Team,
} from '../store/index.js';
import { checkName } from './names.js';
import type { KeyPrincipal, TokenPrincipal } from './principal.js';
import { VerifiedKeys } from './verified-keys.js';
import { VerifiedTokens } from './verified-tokens.js';

export interface CreatedKey {
  key: ApiKey;
  /** Shown once, at creation; only its scrypt hash is stored. */
  secret: string;
}

export interface CreatedToken {
  token: AccessToken;
  /** Shown once, at creation; only its keyed digest is stored. */
  value: string;
}

export interface BootstrapResult {
  organization: Organization;
  service: Service;
  key: CreatedKey;
  team: Team;
  token: CreatedToken;
}

export interface BootstrapValues {
  keyId?: string | undefined;
  keySecret?: string | undefined;
  accessToken?: string | undefined;
}

/** A hash no secret matches, verified against for unknown key ids (made once, when first needed). */
let unknownKey: Promise<string> | undefined;
function unknownKeyHash(): Promise<string> {
  unknownKey ??= hashSecret(randomSecret());
  return unknownKey;
}

const SERVICE_KINDS = ['embedded', 'clickhouse'] as const;
export const DEFAULT_SERVICES_PER_ORGANIZATION = 10;

/**
 * Organizations, database services, API keys, teams, users and access tokens: who may call Sluice
 * and what they own. Secrets leave this class only once, in the result of the call that made them.
 */
export class IdentityService {
  /** Keys verified within the minute: requests check them without waiting (src/http/auth.ts). */
  readonly verifiedKeys = new VerifiedKeys();
  /** Tokens by digest, trusted for a minute; a revocation clears them all. */
  private readonly verifiedTokens = new VerifiedTokens();
  /** Services are never deleted, so a service once found stays found (every pipe request asks). */
  private readonly knownServices = new Map<string, Service>();

  constructor(
    private readonly store: Store,
    private readonly masterKey: Buffer,
    /** The most database services one organization may have (each runs engine processes). */
    private readonly servicesPerOrganization = DEFAULT_SERVICES_PER_ORGANIZATION,
  ) {}

  /** On an empty store: the default organization, service, admin key, team and user token. */
  async bootstrap(values: BootstrapValues = {}): Promise<BootstrapResult | undefined> {
    return this.store.transaction(async (repos) => {
      if ((await repos.identity.countOrganizations()) > 0) return undefined;
      const now = new Date();
      const organization: Organization = {
        id: randomUUID(),
        name: 'default',
        operator: true,
        createdAt: now,
      };
      await repos.identity.insertOrganization(organization);
      const service: Service = {
        id: randomUUID(),
        organizationId: organization.id,
        name: 'default',
        kind: 'embedded',
        connection: {},
        createdAt: now,
      };
      await repos.identity.insertService(service);
      const key = await this.makeKey(
        organization.id,
        'bootstrap admin',
        'admin',
        values.keyId,
        values.keySecret,
      );
      await repos.identity.insertApiKey(key.key);
      const team: Team = {
        id: randomUUID(),
        organizationId: organization.id,
        name: 'default',
        createdAt: now,
      };
      await repos.identity.insertTeam(team);
      const user = await repos.identity.ensureUser(team.id, 'admin', randomUUID(), now);
      const value = values.accessToken ?? newTokenValue();
      const token = {
        id: randomUUID(),
        userId: user.id,
        name: 'bootstrap',
        digest: tokenDigest(value, this.masterKey),
        createdAt: now,
      };
      await repos.identity.insertAccessToken(token);
      return {
        organization,
        service,
        key,
        team,
        token: {
          value,
          token: {
            ...token,
            userName: user.name,
            teamId: team.id,
            organizationId: organization.id,
            revokedAt: null,
          },
        },
      };
    });
  }

  /** Checks an API key id and secret; undefined when unknown, revoked or wrong. */
  async authenticateKey(keyId: string, secret: string): Promise<KeyPrincipal | undefined> {
    const cached = this.verifiedKeys.lookup(keyId, secret);
    if (cached) return cached;
    const generation = this.verifiedKeys.generation();
    const key = await this.store.repos.identity.getApiKey(keyId);
    // An unknown id costs the same scrypt as a known one: answer times do not tell which ids exist.
    const verified = await verifySecret(secret, key?.secretHash ?? (await unknownKeyHash()));
    if (!key || key.revokedAt || !verified) return undefined;
    const organization = await this.store.repos.identity.getOrganization(key.organizationId);
    const principal: KeyPrincipal = {
      keyId: key.id,
      organizationId: key.organizationId,
      role: key.role,
      operator: organization?.operator ?? false,
    };
    this.verifiedKeys.remember(keyId, secret, principal, generation);
    return principal;
  }

  async authenticateToken(value: string): Promise<TokenPrincipal | undefined> {
    const cached = this.verifiedTokens.lookup(value);
    if (cached) return cached;
    const generation = this.verifiedTokens.generation();
    const token = await this.store.repos.identity.findAccessTokenByDigest(tokenDigest(value, this.masterKey));
    if (!token || token.revokedAt) return undefined;
    const principal: TokenPrincipal = {
      tokenId: token.id,
      userId: token.userId,
      userName: token.userName,
      teamId: token.teamId,
      organizationId: token.organizationId,
    };
    this.verifiedTokens.remember(value, principal, generation);
    return principal;
  }

  /** Creates an organization with its first admin key (the only way in to a new organization). */
  async createOrganization(input: {
    name?: unknown;
  }): Promise<{ organization: Organization; key: CreatedKey }> {
    const problems: Problem[] = [];
    checkName('name', input.name, problems);
    if (problems.length) throw new ValidationError(problems);
    const name = input.name as string;
    const key = await this.makeKey('', 'admin', 'admin');
    return this.store.transaction(async (repos) => {
      if (await repos.identity.findOrganizationByName(name)) {
        throw new NameTakenError(`an organization named "${name}" already exists`);
      }
      const organization: Organization = { id: randomUUID(), name, operator: false, createdAt: new Date() };
      await repos.identity.insertOrganization(organization);
      key.key.organizationId = organization.id;
      await repos.identity.insertApiKey(key.key);
      return { organization, key };
    });
  }

  /** The caller's organization, or every organization for an operator. */
  async listOrganizations(principal: { organizationId: string; operator: boolean }): Promise<Organization[]> {
    const all = await this.store.repos.identity.listOrganizations();
    return principal.operator ? all : all.filter((org) => org.id === principal.organizationId);
  }

  async getOrganization(id: string): Promise<Organization> {
    const organization = isUuid(id) ? await this.store.repos.identity.getOrganization(id) : undefined;
    if (!organization) throw new NotFoundError('SLUICE_ERR_ORGANIZATION_NOT_FOUND', 'organization');
    return organization;
  }

  async createService(organizationId: string, input: { name?: unknown; kind?: unknown }): Promise<Service> {
    const problems: Problem[] = [];
    checkName('name', input.name, problems);
    const kind = input.kind ?? 'embedded';
    if (!SERVICE_KINDS.includes(kind as never)) {
      problems.push({ path: 'kind', message: `Use one of ${SERVICE_KINDS.join(', ')}` });
    } else if (kind === 'clickhouse') {
      problems.push({
        path: 'kind',
        message: 'ClickHouse server services are not supported yet: use "embedded"',
      });
    }
    if (problems.length) throw new ValidationError(problems);
    await this.getOrganization(organizationId);
    const service: Service = {
      id: randomUUID(),
      organizationId,
      name: input.name as string,
      kind: 'embedded',
      connection: {},
      createdAt: new Date(),
    };
    return this.store.transaction(async (repos) => {
      const existing = await repos.identity.listServices(organizationId);
      if (existing.length >= this.servicesPerOrganization) {
        throw new ValidationError([
          {
            path: '',
            message: `this organization has ${existing.length} services, the most this server allows (SLUICE_SERVICES_PER_ORGANIZATION = ${this.servicesPerOrganization}); the operator can raise it`,
          },
        ]);
      }
      const taken = existing.some((s) => s.name === service.name);
      if (taken)
        throw new NameTakenError(`a service named "${service.name}" already exists in this organization`);
      await repos.identity.insertService(service);
      return service;
    });
  }

  listServices(organizationId: string): Promise<Service[]> {
    return this.store.repos.identity.listServices(organizationId);
  }

  async getService(organizationId: string, serviceId: string): Promise<Service> {
    const cacheKey = `${organizationId}/${serviceId}`;
    const known = this.knownServices.get(cacheKey);
    if (known) return known;
    const service = isUuid(serviceId)
      ? await this.store.repos.identity.getService(organizationId, serviceId)
      : undefined;
    if (!service) throw new NotFoundError('SLUICE_ERR_SERVICE_NOT_FOUND', 'service');
    this.knownServices.set(cacheKey, service);
    return service;
  }

  async createKey(organizationId: string, input: { name?: unknown; role?: unknown }): Promise<CreatedKey> {
    const problems: Problem[] = [];
    checkName('name', input.name ?? 'key', problems);
    if (!ROLES.includes(input.role as Role)) {
      problems.push({ path: 'role', message: `Required: one of ${ROLES.join(', ')}` });
    }
    if (problems.length) throw new ValidationError(problems);
    await this.getOrganization(organizationId);
    const created = await this.makeKey(organizationId, (input.name as string) ?? 'key', input.role as Role);
    await this.store.repos.identity.insertApiKey(created.key);
    return created;
  }

  listKeys(organizationId: string): Promise<ApiKey[]> {
    return this.store.repos.identity.listApiKeys(organizationId);
  }

  async revokeKey(organizationId: string, keyId: string): Promise<ApiKey> {
    const key = await this.store.repos.identity.revokeApiKey(organizationId, keyId, new Date());
    if (!key) throw new NotFoundError('SLUICE_ERR_KEY_NOT_FOUND', 'key');
    this.verifiedKeys.forget(keyId);
    return key;
  }

  async createTeam(organizationId: string, input: { name?: unknown }): Promise<Team> {
    const problems: Problem[] = [];
    checkName('name', input.name, problems);
    if (problems.length) throw new ValidationError(problems);
    await this.getOrganization(organizationId);
    const team: Team = {
      id: randomUUID(),
      organizationId,
      name: input.name as string,
      createdAt: new Date(),
    };
    return this.store.transaction(async (repos) => {
      if ((await repos.identity.listTeams(organizationId)).some((t) => t.name === team.name)) {
        throw new NameTakenError(`a team named "${team.name}" already exists in this organization`);
      }
      await repos.identity.insertTeam(team);
      return team;
    });
  }

  listTeams(organizationId: string): Promise<Team[]> {
    return this.store.repos.identity.listTeams(organizationId);
  }

  async getTeam(organizationId: string, teamId: string): Promise<Team> {
    const team = isUuid(teamId) ? await this.store.repos.identity.getTeam(organizationId, teamId) : undefined;
    if (!team) throw new NotFoundError('SLUICE_ERR_TEAM_NOT_FOUND', 'team');
    return team;
  }

  /** A new token for the team's user `user` (created on first use). */
  async createToken(
    organizationId: string,
    teamId: string,
    input: { user?: unknown; name?: unknown },
  ): Promise<CreatedToken> {
    const problems: Problem[] = [];
    checkName('user', input.user, problems);
    checkName('name', input.name ?? 'token', problems);
    if (problems.length) throw new ValidationError(problems);
    const team = await this.getTeam(organizationId, teamId);
    const value = newTokenValue();
    const now = new Date();
    return this.store.transaction(async (repos) => {
      const user = await repos.identity.ensureUser(team.id, input.user as string, randomUUID(), now);
      const token = {
        id: randomUUID(),
        userId: user.id,
        name: (input.name as string | undefined) ?? 'token',
        digest: tokenDigest(value, this.masterKey),
        createdAt: now,
      };
      await repos.identity.insertAccessToken(token);
      return {
        value,
        token: { ...token, userName: user.name, teamId: team.id, organizationId, revokedAt: null },
      };
    });
  }

  async listTokens(organizationId: string, teamId: string): Promise<AccessToken[]> {
    await this.getTeam(organizationId, teamId);
    return this.store.repos.identity.listAccessTokens(organizationId, teamId);
  }

  async revokeToken(organizationId: string, teamId: string, tokenId: string): Promise<void> {
    const revoked =
      isUuid(tokenId) &&
      (await this.store.repos.identity.revokeAccessToken(organizationId, teamId, tokenId, new Date()));
    if (!revoked) throw new NotFoundError('SLUICE_ERR_TOKEN_NOT_FOUND', 'token');
    this.verifiedTokens.forgetAll();
  }

  private async makeKey(
    organizationId: string,
    name: string,
    role: Role,
    id: string = newKeyId(),
    secret: string = randomSecret(),
  ): Promise<CreatedKey> {
    return {
      secret,
      key: {
        id,
        organizationId,
        name,
        role,
        secretHash: await hashSecret(secret),
        createdAt: new Date(),
        revokedAt: null,
      },
    };
  }
}

function newKeyId(): string {
  return `sk_${randomBytes(10).toString('hex')}`;
}

function newTokenValue(): string {
  return `slt_${randomSecret()}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Path ids that are not UUIDs cannot exist; checking first keeps PostgreSQL from a cast error. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
