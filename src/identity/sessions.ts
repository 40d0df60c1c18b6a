import { randomUUID } from 'node:crypto';
import { randomSecret, tokenDigest } from '../crypto/index.js';
import { UnauthorizedError, ValidationError } from '../errors.js';
import type { LiveConsoleSession, Repos, Store, Team } from '../store/index.js';
import type { KeyPrincipal, TokenPrincipal } from './principal.js';
import { DEFAULT_CONSOLE_USER, type SignInBody, TeamChoiceError } from './session-input.js';

/** What the console is told of its session (GET /console/session). */
export interface ConsoleSessionView {
  expiresAt: string;
  csrfToken: string;
  key: { id: string; organizationId: string; organizationName: string; role: string; operator: boolean };
  alerts: { teamId: string; teamName: string; userId: string; userName: string } | null;
  /** Set when `alerts` is null: why, and how to sign in to get a team user. */
  alertsUnavailable?: string;
}

/** A live session: what it shows, and who it acts as in each area. */
export interface ActiveSession {
  view: ConsoleSessionView;
  /** The caller under /v1: the session's API key, with its role and organization of today. */
  key: KeyPrincipal;
  /** The caller under /api/v2; undefined when the session covers /v1 only. */
  user: TokenPrincipal | undefined;
  expiresAt: Date;
}

export interface ConsoleSessionsOptions {
  /** How long a session lives from its sign-in (SLUICE_CONSOLE_SESSION_HOURS): absolute, never renewed. */
  lifetimeMs: number;
  clock?: () => Date;
}

/** An authenticated sign-in: the key (and the token, if one was sent) already checked. */
export interface SignIn {
  key: KeyPrincipal;
  token: TokenPrincipal | undefined;
  body: SignInBody;
}

/**
 * Browser sign-in sessions of the console (issue 38). A session is a random cookie value bound to
 * an API key (the /v1 caller) and, when the sign-in allows it, to a user of a team (the /api/v2
 * caller). Only the value's keyed digest is stored, as for access tokens; the CSRF token is derived
 * from the value, so it is not stored either.
 */
export class ConsoleSessions {
  private readonly clock: () => Date;

  constructor(
    private readonly store: Store,
    private readonly masterKey: Buffer,
    private readonly options: ConsoleSessionsOptions,
  ) {
    this.clock = options.clock ?? (() => new Date());
  }

  /**
   * Opens a session; returns the cookie's value, shown this once. Team, user and session are
   * written in one transaction: a refused sign-in stores nothing.
   */
  async signIn(input: SignIn): Promise<{ value: string; session: ActiveSession }> {
    const { key, token } = input;
    if (token && token.organizationId !== key.organizationId) {
      throw new ValidationError([
        {
          path: 'accessToken',
          message:
            "the token is of a team of another organization than the key's: send a token of a team of the key's organization",
        },
      ]);
    }
    const value = `sls_${randomSecret()}`;
    const digest = tokenDigest(value, this.masterKey);
    const now = this.clock();
    const live = await this.store.transaction(async (repos) => {
      await repos.consoleSessions.deleteExpired(now);
      const binding = token
        ? { teamId: token.teamId, userId: token.userId, tokenId: token.tokenId }
        : key.role === 'admin'
          ? await this.adminBinding(repos, key, input.body, now)
          : { teamId: null, userId: null, tokenId: null };
      await repos.consoleSessions.insert({
        id: randomUUID(),
        digest,
        keyId: key.keyId,
        ...binding,
        createdAt: now,
        expiresAt: new Date(now.getTime() + this.options.lifetimeMs),
      });
      return repos.consoleSessions.findLive(digest, now);
    });
    // Its key or token was revoked on another node within the moment its check was cached here.
    if (!live) throw new UnauthorizedError('the API key or access token was revoked: sign in with another');
    return { value, session: this.active(value, live) };
  }

  /** The live session of a cookie value; undefined when unknown, expired, signed out or revoked. */
  async find(value: string): Promise<ActiveSession | undefined> {
    const digest = tokenDigest(value, this.masterKey);
    const live = await this.store.repos.consoleSessions.findLive(digest, this.clock());
    return live && this.active(value, live);
  }

  /** Ends the session of a cookie value; false when it was not signed in. */
  signOut(value: string): Promise<boolean> {
    return this.store.repos.consoleSessions.signOut(tokenDigest(value, this.masterKey), this.clock());
  }

  /** The CSRF token of a session: a keyed digest of its value, so nothing more is stored. */
  csrfToken(value: string): string {
    return tokenDigest(`console csrf:${value}`, this.masterKey);
  }

  /** Seconds a session has left at this server's clock (the cookie's Max-Age, 43200 for 12 hours). */
  secondsLeft(session: ActiveSession): number {
    return Math.max(0, Math.round((session.expiresAt.getTime() - this.clock().getTime()) / 1000));
  }

  /**
   * An admin key's team user: the team named, or the organization's only team, or a new team
   * "default" when it has none; the user named, or "console", created on first use. An admin key
   * may make tokens for any team of its organization (POST .../teams/{teamId}/tokens needs admin,
   * src/http/v1/identity-routes.ts), so it may act as a team user here without one.
   */
  private async adminBinding(repos: Repos, key: KeyPrincipal, body: SignInBody, now: Date) {
    const teams = await repos.identity.listTeams(key.organizationId);
    const team = await this.chooseTeam(repos, key.organizationId, teams, body.teamId, now);
    const user = await repos.identity.ensureUser(
      team.id,
      body.user ?? DEFAULT_CONSOLE_USER,
      randomUUID(),
      now,
    );
    return { teamId: team.id, userId: user.id, tokenId: null };
  }

  private async chooseTeam(
    repos: Repos,
    organizationId: string,
    teams: Team[],
    teamId: string | undefined,
    now: Date,
  ): Promise<Team> {
    if (teamId !== undefined) {
      const named = teams.find((team) => team.id === teamId);
      if (!named) throw new TeamChoiceError(teams, teamId);
      return named;
    }
    if (teams.length === 1) return teams[0] as Team;
    if (teams.length > 1) throw new TeamChoiceError(teams, undefined);
    const team: Team = { id: randomUUID(), organizationId, name: 'default', createdAt: now };
    await repos.identity.insertTeam(team);
    return team;
  }

  private active(value: string, live: LiveConsoleSession): ActiveSession {
    const key: KeyPrincipal = {
      keyId: live.keyId,
      organizationId: live.organizationId,
      role: live.role,
      operator: live.operator,
    };
    const user: TokenPrincipal | undefined =
      live.teamId && live.userId
        ? {
            // Nothing reads tokenId but logs; a session without a token is named as a session.
            tokenId: live.tokenId ?? `console-session:${live.id}`,
            userId: live.userId,
            userName: live.userName ?? '',
            teamId: live.teamId,
            organizationId: live.organizationId,
          }
        : undefined;
    return { view: this.view(value, live, user), key, user, expiresAt: live.expiresAt };
  }

  private view(
    value: string,
    live: LiveConsoleSession,
    user: TokenPrincipal | undefined,
  ): ConsoleSessionView {
    const view: ConsoleSessionView = {
      expiresAt: live.expiresAt.toISOString(),
      csrfToken: this.csrfToken(value),
      key: {
        id: live.keyId,
        organizationId: live.organizationId,
        organizationName: live.organizationName,
        role: live.role,
        operator: live.operator,
      },
      alerts: user
        ? { teamId: user.teamId, teamName: live.teamName ?? '', userId: user.userId, userName: user.userName }
        : null,
    };
    if (!user) view.alertsUnavailable = alertsUnavailable(live.role);
    return view;
  }
}

/** Why a session has no team user, and how to sign in to get one. */
export function alertsUnavailable(role: string): string {
  return `this session's API key is ${role}, and only an admin key may act as a user of a team without an access token, so the alerts area (/api/v2) is not available: sign in with an access token of your team too (accessToken), or with an admin key`;
}
