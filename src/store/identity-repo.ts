import type { Queryable } from './db.js';

export type Role = 'admin' | 'developer' | 'read-only';
export const ROLES: Role[] = ['admin', 'developer', 'read-only'];

export interface Organization {
  id: string;
  name: string;
  /** The bootstrap organization: its admin keys may create and list every organization. */
  operator: boolean;
  createdAt: Date;
}

export interface Service {
  id: string;
  organizationId: string;
  name: string;
  kind: 'embedded' | 'clickhouse';
  connection: Record<string, unknown>;
  createdAt: Date;
}

export interface ApiKey {
  id: string;
  organizationId: string;
  name: string;
  role: Role;
  secretHash: string;
  createdAt: Date;
  revokedAt: Date | null;
}

export interface Team {
  id: string;
  organizationId: string;
  name: string;
  createdAt: Date;
}

export interface User {
  id: string;
  teamId: string;
  name: string;
  createdAt: Date;
}

export interface AccessToken {
  id: string;
  userId: string;
  userName: string;
  teamId: string;
  organizationId: string;
  name: string;
  createdAt: Date;
  revokedAt: Date | null;
}

const ORG = 'id, name, operator, created_at as "createdAt"';
const SERVICE = 'id, organization_id as "organizationId", name, kind, connection, created_at as "createdAt"';
const KEY =
  'id, organization_id as "organizationId", name, role, secret_hash as "secretHash", created_at as "createdAt", revoked_at as "revokedAt"';
const TEAM = 'id, organization_id as "organizationId", name, created_at as "createdAt"';
const TOKEN = `t.id, t.user_id as "userId", u.name as "userName", u.team_id as "teamId",
  tm.organization_id as "organizationId", t.name, t.created_at as "createdAt", t.revoked_at as "revokedAt"`;
const TOKEN_FROM = 'access_tokens t join users u on u.id = t.user_id join teams tm on tm.id = u.team_id';

/** Organizations, services, API keys, teams, users and access tokens. */
export class IdentityRepo {
  constructor(private readonly db: Queryable) {}

  /** A value of the store's own metadata (for example the master-key check). */
  async getMeta(name: string): Promise<string | undefined> {
    const rows = await this.db.query<{ value: string }>('select value from sluice_meta where name = $1', [
      name,
    ]);
    return rows[0]?.value;
  }

  /** Sets a metadata value, whatever was there. */
  async setMeta(name: string, value: string): Promise<void> {
    await this.db.query(
      'insert into sluice_meta (name, value) values ($1, $2) on conflict (name) do update set value = $2',
      [name, value],
    );
  }

  /** Sets a metadata value unless one is there already; returns the value that is kept. */
  async putMetaOnce(name: string, value: string): Promise<string> {
    await this.db.query(
      'insert into sluice_meta (name, value) values ($1, $2) on conflict (name) do nothing',
      [name, value],
    );
    return (await this.getMeta(name)) as string;
  }

  async insertOrganization(org: Organization): Promise<void> {
    await this.db.query(
      'insert into organizations (id, name, operator, created_at) values ($1, $2, $3, $4)',
      [org.id, org.name, org.operator, org.createdAt],
    );
  }

  async listOrganizations(): Promise<Organization[]> {
    return this.db.query<Organization>(`select ${ORG} from organizations order by created_at, name`);
  }

  async getOrganization(id: string): Promise<Organization | undefined> {
    return (await this.db.query<Organization>(`select ${ORG} from organizations where id = $1`, [id]))[0];
  }

  async findOrganizationByName(name: string): Promise<Organization | undefined> {
    return (await this.db.query<Organization>(`select ${ORG} from organizations where name = $1`, [name]))[0];
  }

  async countOrganizations(): Promise<number> {
    const rows = await this.db.query<{ n: number }>('select count(*)::int as n from organizations');
    return rows[0]?.n ?? 0;
  }

  async insertService(service: Service): Promise<void> {
    await this.db.query(
      'insert into services (id, organization_id, name, kind, connection, created_at) values ($1, $2, $3, $4, $5::jsonb, $6)',
      [
        service.id,
        service.organizationId,
        service.name,
        service.kind,
        JSON.stringify(service.connection),
        service.createdAt,
      ],
    );
  }

  async listServices(organizationId: string): Promise<Service[]> {
    return this.db.query<Service>(
      `select ${SERVICE} from services where organization_id = $1 order by created_at, name`,
      [organizationId],
    );
  }

  async getService(organizationId: string, id: string): Promise<Service | undefined> {
    const rows = await this.db.query<Service>(
      `select ${SERVICE} from services where organization_id = $1 and id = $2`,
      [organizationId, id],
    );
    return rows[0];
  }

  async insertApiKey(key: ApiKey): Promise<void> {
    await this.db.query(
      'insert into api_keys (id, organization_id, name, role, secret_hash, created_at) values ($1, $2, $3, $4, $5, $6)',
      [key.id, key.organizationId, key.name, key.role, key.secretHash, key.createdAt],
    );
  }

  async getApiKey(id: string): Promise<ApiKey | undefined> {
    return (await this.db.query<ApiKey>(`select ${KEY} from api_keys where id = $1`, [id]))[0];
  }

  async listApiKeys(organizationId: string): Promise<ApiKey[]> {
    return this.db.query<ApiKey>(
      `select ${KEY} from api_keys where organization_id = $1 order by created_at, id`,
      [organizationId],
    );
  }

  async revokeApiKey(organizationId: string, id: string, at: Date): Promise<ApiKey | undefined> {
    const rows = await this.db.query<ApiKey>(
      `update api_keys set revoked_at = coalesce(revoked_at, $3) where organization_id = $1 and id = $2 returning ${KEY}`,
      [organizationId, id, at],
    );
    return rows[0];
  }

  async insertTeam(team: Team): Promise<void> {
    await this.db.query('insert into teams (id, organization_id, name, created_at) values ($1, $2, $3, $4)', [
      team.id,
      team.organizationId,
      team.name,
      team.createdAt,
    ]);
  }

  async listTeams(organizationId: string): Promise<Team[]> {
    return this.db.query<Team>(
      `select ${TEAM} from teams where organization_id = $1 order by created_at, name`,
      [organizationId],
    );
  }

  async getTeam(organizationId: string, id: string): Promise<Team | undefined> {
    const rows = await this.db.query<Team>(
      `select ${TEAM} from teams where organization_id = $1 and id = $2`,
      [organizationId, id],
    );
    return rows[0];
  }

  /** Returns the team's user of that name, creating it when absent. */
  async ensureUser(teamId: string, name: string, id: string, at: Date): Promise<User> {
    await this.db.query(
      'insert into users (id, team_id, name, created_at) values ($1, $2, $3, $4) on conflict (team_id, name) do nothing',
      [id, teamId, name, at],
    );
    const rows = await this.db.query<User>(
      'select id, team_id as "teamId", name, created_at as "createdAt" from users where team_id = $1 and name = $2',
      [teamId, name],
    );
    return rows[0] as User;
  }

  async insertAccessToken(token: {
    id: string;
    userId: string;
    name: string;
    digest: string;
    createdAt: Date;
  }) {
    await this.db.query(
      'insert into access_tokens (id, user_id, name, digest, created_at) values ($1, $2, $3, $4, $5)',
      [token.id, token.userId, token.name, token.digest, token.createdAt],
    );
  }

  async findAccessTokenByDigest(digest: string): Promise<AccessToken | undefined> {
    const rows = await this.db.query<AccessToken>(`select ${TOKEN} from ${TOKEN_FROM} where t.digest = $1`, [
      digest,
    ]);
    return rows[0];
  }

  async listAccessTokens(organizationId: string, teamId: string): Promise<AccessToken[]> {
    return this.db.query<AccessToken>(
      `select ${TOKEN} from ${TOKEN_FROM} where tm.organization_id = $1 and tm.id = $2 order by t.created_at, t.id`,
      [organizationId, teamId],
    );
  }

  /** Revokes every access token not revoked yet, of every organization; returns how many. */
  async revokeAllAccessTokens(at: Date): Promise<number> {
    const rows = await this.db.query<{ id: string }>(
      'update access_tokens set revoked_at = $1 where revoked_at is null returning id',
      [at],
    );
    return rows.length;
  }

  async revokeAccessToken(organizationId: string, teamId: string, id: string, at: Date) {
    const rows = await this.db.query<{ id: string }>(
      `update access_tokens t set revoked_at = coalesce(t.revoked_at, $4)
         from users u join teams tm on tm.id = u.team_id
        where t.user_id = u.id and tm.organization_id = $1 and tm.id = $2 and t.id = $3
        returning t.id`,
      [organizationId, teamId, id, at],
    );
    return rows[0] !== undefined;
  }
}
