import { Type as T } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { IdentityService } from '../../identity/index.js';
import {
  CreatedKeyView,
  CreatedTokenView,
  KeyView,
  keyView,
  OrganizationView,
  organizationView,
  ServiceView,
  serviceView,
  TeamView,
  TokenView,
  teamView,
  tokenView,
} from '../../identity/index.js';
import { principalOf } from '../auth.js';
import { EmptyEnvelope, Envelope, ok, V1_ERRORS } from '../envelope.js';

type OrgParams = { organizationId: string };
const OrgParams = T.Object({ organizationId: T.String() });
const Name = T.String({ minLength: 1, maxLength: 255 });

/**
 * Organizations, services, API keys, teams and access tokens under /v1: what the `sluice` CLI uses
 * while a server runs. Creating keys, services, teams and tokens needs an admin key.
 */
export function identityRoutes(app: FastifyInstance, identity: IdentityService): void {
  const tags = ['organizations'];
  const response = <S extends Parameters<typeof Envelope>[0]>(schema: S) => ({
    200: Envelope(schema),
    ...V1_ERRORS,
  });

  app.get(
    '/v1/organizations',
    {
      config: { access: { role: 'read-only' } },
      schema: {
        tags,
        summary: 'List the organizations of the key (all of them for an operator admin key)',
        response: response(T.Array(OrganizationView)),
      },
    },
    async (request) =>
      ok(request, (await identity.listOrganizations(principalOf(request))).map(organizationView)),
  );

  app.post<{ Body: { name?: unknown } }>(
    '/v1/organizations',
    {
      config: { access: { role: 'admin', operatorOnly: true } },
      schema: {
        tags,
        summary: 'Create an organization with its first admin key (operator admin keys only)',
        body: T.Object({ name: Name }),
        response: response(T.Object({ organization: OrganizationView, key: CreatedKeyView })),
      },
    },
    async (request) => {
      const created = await identity.createOrganization(request.body ?? {});
      return ok(request, {
        organization: organizationView(created.organization),
        key: { ...keyView(created.key.key), secret: created.key.secret },
      });
    },
  );

  app.get<{ Params: OrgParams }>(
    '/v1/organizations/:organizationId',
    {
      config: { access: { role: 'read-only', operatorMayCross: true } },
      schema: {
        tags,
        summary: 'Get an organization',
        params: OrgParams,
        response: response(OrganizationView),
      },
    },
    async (request) =>
      ok(request, organizationView(await identity.getOrganization(request.params.organizationId))),
  );

  const serviceTags = ['services'];
  app.get<{ Params: OrgParams }>(
    '/v1/organizations/:organizationId/services',
    {
      config: { access: { role: 'read-only' } },
      schema: {
        tags: serviceTags,
        summary: 'List database services',
        params: OrgParams,
        response: response(T.Array(ServiceView)),
      },
    },
    async (request) => {
      await identity.getOrganization(request.params.organizationId);
      return ok(request, (await identity.listServices(request.params.organizationId)).map(serviceView));
    },
  );

  app.post<{ Params: OrgParams; Body: { name?: unknown; kind?: unknown } }>(
    '/v1/organizations/:organizationId/services',
    {
      config: { access: { role: 'admin' } },
      schema: {
        tags: serviceTags,
        summary: 'Create a database service (kind embedded; clickhouse is not supported yet)',
        params: OrgParams,
        body: T.Object({ name: Name, kind: T.Optional(T.String({ enum: ['embedded', 'clickhouse'] })) }),
        response: response(ServiceView),
      },
    },
    async (request) =>
      ok(
        request,
        serviceView(await identity.createService(request.params.organizationId, request.body ?? {})),
      ),
  );

  type ServiceParams = OrgParams & { serviceId: string };
  const ServiceParams = T.Object({ organizationId: T.String(), serviceId: T.String() });
  app.get<{ Params: ServiceParams }>(
    '/v1/organizations/:organizationId/services/:serviceId',
    {
      config: { access: { role: 'read-only' } },
      schema: {
        tags: serviceTags,
        summary: 'Get a database service',
        params: ServiceParams,
        response: response(ServiceView),
      },
    },
    async (request) =>
      ok(
        request,
        serviceView(await identity.getService(request.params.organizationId, request.params.serviceId)),
      ),
  );

  const keyTags = ['keys'];
  app.get<{ Params: OrgParams }>(
    '/v1/organizations/:organizationId/keys',
    {
      config: { access: { role: 'admin' } },
      schema: {
        tags: keyTags,
        summary: 'List API keys (never their secrets)',
        params: OrgParams,
        response: response(T.Array(KeyView)),
      },
    },
    async (request) => {
      await identity.getOrganization(request.params.organizationId);
      return ok(request, (await identity.listKeys(request.params.organizationId)).map(keyView));
    },
  );

  app.post<{ Params: OrgParams; Body: { name?: unknown; role?: unknown } }>(
    '/v1/organizations/:organizationId/keys',
    {
      config: { access: { role: 'admin' } },
      schema: {
        tags: keyTags,
        summary: 'Create an API key; its secret is in this response only',
        params: OrgParams,
        body: T.Object({
          name: T.Optional(Name),
          role: T.String({ enum: ['admin', 'developer', 'read-only'] }),
        }),
        response: response(CreatedKeyView),
      },
    },
    async (request) => {
      const created = await identity.createKey(request.params.organizationId, request.body ?? {});
      return ok(request, { ...keyView(created.key), secret: created.secret });
    },
  );

  type KeyParams = OrgParams & { keyId: string };
  const KeyParams = T.Object({ organizationId: T.String(), keyId: T.String() });
  app.delete<{ Params: KeyParams }>(
    '/v1/organizations/:organizationId/keys/:keyId',
    {
      config: { access: { role: 'admin' } },
      schema: { tags: keyTags, summary: 'Revoke an API key', params: KeyParams, response: response(KeyView) },
    },
    async (request) =>
      ok(request, keyView(await identity.revokeKey(request.params.organizationId, request.params.keyId))),
  );

  const teamTags = ['teams'];
  app.get<{ Params: OrgParams }>(
    '/v1/organizations/:organizationId/teams',
    {
      config: { access: { role: 'read-only' } },
      schema: {
        tags: teamTags,
        summary: 'List teams (the owners of alerts)',
        params: OrgParams,
        response: response(T.Array(TeamView)),
      },
    },
    async (request) => {
      await identity.getOrganization(request.params.organizationId);
      return ok(request, (await identity.listTeams(request.params.organizationId)).map(teamView));
    },
  );

  app.post<{ Params: OrgParams; Body: { name?: unknown } }>(
    '/v1/organizations/:organizationId/teams',
    {
      config: { access: { role: 'admin' } },
      schema: {
        tags: teamTags,
        summary: 'Create a team',
        params: OrgParams,
        body: T.Object({ name: Name }),
        response: response(TeamView),
      },
    },
    async (request) =>
      ok(request, teamView(await identity.createTeam(request.params.organizationId, request.body ?? {}))),
  );

  type TeamParams = OrgParams & { teamId: string };
  const TeamParams = T.Object({ organizationId: T.String(), teamId: T.String() });
  app.get<{ Params: TeamParams }>(
    '/v1/organizations/:organizationId/teams/:teamId/tokens',
    {
      config: { access: { role: 'admin' } },
      schema: {
        tags: teamTags,
        summary: 'List the access tokens of a team (never their values)',
        params: TeamParams,
        response: response(T.Array(TokenView)),
      },
    },
    async (request) =>
      ok(
        request,
        (await identity.listTokens(request.params.organizationId, request.params.teamId)).map(tokenView),
      ),
  );

  app.post<{ Params: TeamParams; Body: { user?: unknown; name?: unknown } }>(
    '/v1/organizations/:organizationId/teams/:teamId/tokens',
    {
      config: { access: { role: 'admin' } },
      schema: {
        tags: teamTags,
        summary: 'Create a bearer access token for a user of the team (the user is created on first use)',
        params: TeamParams,
        body: T.Object({ user: Name, name: T.Optional(Name) }),
        response: response(CreatedTokenView),
      },
    },
    async (request) => {
      const created = await identity.createToken(
        request.params.organizationId,
        request.params.teamId,
        request.body ?? {},
      );
      return ok(request, { ...tokenView(created.token), token: created.value });
    },
  );

  type TokenParams = TeamParams & { tokenId: string };
  const TokenParams = T.Object({ organizationId: T.String(), teamId: T.String(), tokenId: T.String() });
  app.delete<{ Params: TokenParams }>(
    '/v1/organizations/:organizationId/teams/:teamId/tokens/:tokenId',
    {
      config: { access: { role: 'admin' } },
      schema: {
        tags: teamTags,
        summary: 'Revoke an access token',
        params: TokenParams,
        response: { 200: EmptyEnvelope, ...V1_ERRORS },
      },
    },
    async (request) => {
      const { organizationId, teamId, tokenId } = request.params;
      await identity.revokeToken(organizationId, teamId, tokenId);
      return { status: 200, requestId: request.id };
    },
  );
}
