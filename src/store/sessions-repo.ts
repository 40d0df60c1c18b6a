import type { Queryable } from './db.js';
import type { Role } from './identity-repo.js';

/** A console session as stored: the digest of its cookie's value, never the value. */
export interface ConsoleSessionRow {
  id: string;
  digest: string;
  keyId: string;
  /** The team user the session acts as under /api/v2; null when it covers /v1 only. */
  teamId: string | null;
  userId: string | null;
  /** The access token the session was signed in with, if any: revoking it ends the session. */
  tokenId: string | null;
  createdAt: Date;
  expiresAt: Date;
}

/** A session that may act now, with what its key and its team user are today. */
export interface LiveConsoleSession {
  id: string;
  keyId: string;
  role: Role;
  organizationId: string;
  organizationName: string;
  operator: boolean;
  teamId: string | null;
  teamName: string | null;
  userId: string | null;
  userName: string | null;
  tokenId: string | null;
  expiresAt: Date;
}

const LIVE = `s.id, s.key_id as "keyId", k.role, k.organization_id as "organizationId",
  o.name as "organizationName", o.operator, s.team_id as "teamId", tm.name as "teamName",
  s.user_id as "userId", u.name as "userName", s.token_id as "tokenId", s.expires_at as "expiresAt"`;
const LIVE_FROM = `console_sessions s
  join api_keys k on k.id = s.key_id
  join organizations o on o.id = k.organization_id
  left join teams tm on tm.id = s.team_id
  left join users u on u.id = s.user_id
  left join access_tokens t on t.id = s.token_id`;

/** Browser sign-in sessions of the console (src/identity/sessions.ts). */
export class ConsoleSessionsRepo {
  constructor(private readonly db: Queryable) {}

  async insert(row: ConsoleSessionRow): Promise<void> {
    await this.db.query(
      `insert into console_sessions (id, digest, key_id, team_id, user_id, token_id, created_at, expires_at)
        values ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [row.id, row.digest, row.keyId, row.teamId, row.userId, row.tokenId, row.createdAt, row.expiresAt],
    );
  }

  /**
   * The session of this digest when it may act at `now`: not signed out, not expired, its key not
   * revoked, and the access token it was signed in with (if any) not revoked. Read on every
   * request, so a revocation ends the session at its next request, on every node.
   */
  async findLive(digest: string, now: Date): Promise<LiveConsoleSession | undefined> {
    const rows = await this.db.query<LiveConsoleSession>(
      `select ${LIVE} from ${LIVE_FROM}
        where s.digest = $1 and s.signed_out_at is null and s.expires_at > $2
          and k.revoked_at is null and (s.token_id is null or t.revoked_at is null)`,
      [digest, now],
    );
    return rows[0];
  }

  /** Signs the session of this digest out; false when there was none still signed in. */
  async signOut(digest: string, at: Date): Promise<boolean> {
    const rows = await this.db.query<{ id: string }>(
      'update console_sessions set signed_out_at = $2 where digest = $1 and signed_out_at is null returning id',
      [digest, at],
    );
    return rows.length > 0;
  }

  /** Deletes sessions expired before `now` (signed out or not); returns how many. */
  async deleteExpired(now: Date): Promise<number> {
    const rows = await this.db.query<{ id: string }>(
      'delete from console_sessions where expires_at <= $1 returning id',
      [now],
    );
    return rows.length;
  }

  /** How many sessions are stored, live or not (tests check that a refused sign-in stores none). */
  async count(): Promise<number> {
    const rows = await this.db.query<{ n: number }>('select count(*)::int as n from console_sessions');
    return rows[0]?.n ?? 0;
  }
}
