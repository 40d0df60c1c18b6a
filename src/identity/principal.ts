import type { Role } from '../store/index.js';

/** Who calls the pipes area: an API key of one organization with a role. */
export interface KeyPrincipal {
  keyId: string;
  organizationId: string;
  role: Role;
  /** The key belongs to the operator (bootstrap) organization. */
  operator: boolean;
}

/** Who calls the alerts area: a user of one team, through an access token. */
export interface TokenPrincipal {
  tokenId: string;
  userId: string;
  userName: string;
  teamId: string;
  organizationId: string;
}

const RANK: Record<Role, number> = { 'read-only': 0, developer: 1, admin: 2 };

export function roleAtLeast(role: Role, needed: Role): boolean {
  return RANK[role] >= RANK[needed];
}
