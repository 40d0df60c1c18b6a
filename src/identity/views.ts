import { type Static, Type as T } from '@sinclair/typebox';
import type { AccessToken, ApiKey, Organization, Service, Team } from '../store/index.js';

/** Public shapes of identity objects: never a hash, a digest or a secret unless just created. */
export const OrganizationView = T.Object({ id: T.String(), name: T.String(), createdAt: T.String() });
export const ServiceView = T.Object({
  id: T.String(),
  organizationId: T.String(),
  name: T.String(),
  kind: T.String({ enum: ['embedded', 'clickhouse'] }),
  createdAt: T.String(),
});
export const KeyView = T.Object({
  id: T.String(),
  name: T.String(),
  role: T.String({ enum: ['admin', 'developer', 'read-only'] }),
  createdAt: T.String(),
  revokedAt: T.Union([T.String(), T.Null()]),
});
export const CreatedKeyView = T.Composite([
  KeyView,
  T.Object({ secret: T.String({ description: 'Shown once: store it now' }) }),
]);
export const TeamView = T.Object({
  id: T.String(),
  organizationId: T.String(),
  name: T.String(),
  createdAt: T.String(),
});
export const TokenView = T.Object({
  id: T.String(),
  name: T.String(),
  user: T.String(),
  teamId: T.String(),
  createdAt: T.String(),
  revokedAt: T.Union([T.String(), T.Null()]),
});
export const CreatedTokenView = T.Composite([
  TokenView,
  T.Object({ token: T.String({ description: 'Shown once: store it now' }) }),
]);

export const organizationView = (o: Organization): Static<typeof OrganizationView> => ({
  id: o.id,
  name: o.name,
  createdAt: o.createdAt.toISOString(),
});
export const serviceView = (s: Service): Static<typeof ServiceView> => ({
  id: s.id,
  organizationId: s.organizationId,
  name: s.name,
  kind: s.kind,
  createdAt: s.createdAt.toISOString(),
});
export const keyView = (k: ApiKey): Static<typeof KeyView> => ({
  id: k.id,
  name: k.name,
  role: k.role,
  createdAt: k.createdAt.toISOString(),
  revokedAt: k.revokedAt?.toISOString() ?? null,
});
export const teamView = (t: Team): Static<typeof TeamView> => ({
  id: t.id,
  organizationId: t.organizationId,
  name: t.name,
  createdAt: t.createdAt.toISOString(),
});
export const tokenView = (t: AccessToken): Static<typeof TokenView> => ({
  id: t.id,
  name: t.name,
  user: t.userName,
  teamId: t.teamId,
  createdAt: t.createdAt.toISOString(),
  revokedAt: t.revokedAt?.toISOString() ?? null,
});
