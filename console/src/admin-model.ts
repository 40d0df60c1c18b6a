/** The identity API's shapes the console's Admin pages read (README, "Organizations and services"). */

import type { Role, Session } from './api.js';

export interface OrganizationView {
  id: string;
  name: string;
  createdAt: string;
}

export interface ServiceView {
  id: string;
  name: string;
  kind: string;
  createdAt: string;
}

export interface KeyView {
  id: string;
  name: string;
  role: Role;
  createdAt: string;
  revokedAt: string | null;
}

export interface TeamView {
  id: string;
  name: string;
  createdAt: string;
}

export interface TokenView {
  id: string;
  name: string;
  user: string;
  teamId: string;
  createdAt: string;
  revokedAt: string | null;
}

const org = (id: string) => `/v1/organizations/${encodeURIComponent(id)}`;

export const adminPaths = {
  organizations: '/v1/organizations',
  organization: org,
  services: (o: string) => `${org(o)}/services`,
  keys: (o: string) => `${org(o)}/keys`,
  key: (o: string, key: string) => `${org(o)}/keys/${encodeURIComponent(key)}`,
  teams: (o: string) => `${org(o)}/teams`,
  tokens: (o: string, team: string) => `${org(o)}/teams/${encodeURIComponent(team)}/tokens`,
  token: (o: string, team: string, token: string) =>
    `${adminPaths.tokens(o, team)}/${encodeURIComponent(token)}`,
};

/** Keys, services, teams and tokens are made and revoked with an admin key only. */
export function isAdmin(session: Session): boolean {
  return session.key.role === 'admin';
}

/** An admin key of the operator organization also lists and creates organizations. */
export function isOperatorAdmin(session: Session): boolean {
  return session.key.operator && session.key.role === 'admin';
}
