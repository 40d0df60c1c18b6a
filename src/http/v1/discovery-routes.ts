import { Type as T } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  type CdcScalingService,
  discoverySchemas as D,
  type PipeDiscovery,
  type ServiceScope,
} from '../../pipes/index.js';
import { Envelope, ok, V1_ERRORS } from '../envelope.js';

const ServiceParams = T.Object({ organizationId: T.String(), serviceId: T.String() });
const SERVICE = '/v1/organizations/:organizationId/services/:serviceId';
const tags = ['pipes'];
const read = { access: { role: 'read-only' as const } };
// A source's credentials are used for the request, and its host is reached from the server: as
// for creating a pipe, read-only keys may not (README, "Discovering a source").
const write = { access: { role: 'developer' as const } };
const response = <R extends Parameters<typeof Envelope>[0]>(result: R) => ({
  200: Envelope(result),
  ...V1_ERRORS,
});

function scopeOf(request: FastifyRequest): ServiceScope {
  const { organizationId, serviceId } = request.params as ServiceScope;
  return { organizationId, serviceId };
}

/**
 * Reading a source before a pipe exists (schema discovery, a PostgreSQL server's tables) and the
 * resources of a service's database pipes (the hosted service's CDC scaling).
 */
export function discoveryRoutes(
  app: FastifyInstance,
  services: { discovery: PipeDiscovery; cdcScaling: CdcScalingService },
): void {
  const { discovery, cdcScaling } = services;
  app.post(
    `${SERVICE}/pipes/schemaDiscovery`,
    {
      config: write,
      schema: {
        tags,
        summary:
          "Infer a source's fields and their types from its first records, without creating a pipe (kafka, kinesis, objectStorage; postgres: one table's target columns)",
        params: ServiceParams,
        body: D.SchemaDiscoveryBody,
        response: response(D.SchemaDiscoveryResult),
      },
    },
    async (request) => ok(request, await discovery.discoverSchema(scopeOf(request), request.body)),
  );

  app.post(
    `${SERVICE}/pipes/postgresTables`,
    {
      config: write,
      schema: {
        tags,
        summary:
          "List a PostgreSQL server's tables with their columns, keys, replica identity and what a pipe would be refused for (an addition)",
        params: ServiceParams,
        body: D.PostgresTablesBody,
        response: response(D.PostgresTablesResult),
      },
    },
    async (request) => ok(request, await discovery.postgresTables(scopeOf(request), request.body)),
  );

  app.get(
    `${SERVICE}/pipesCdcScaling`,
    {
      config: read,
      schema: {
        tags,
        summary: "The resources of the service's database pipes, all together",
        params: ServiceParams,
        response: response(D.CdcScalingResult),
      },
    },
    async (request) => ok(request, await cdcScaling.get(scopeOf(request))),
  );

  app.patch(
    `${SERVICE}/pipesCdcScaling`,
    {
      config: write,
      schema: {
        tags,
        summary:
          "Change the resources of the service's database pipes: whole cores, four GiB of memory per core",
        params: ServiceParams,
        body: D.CdcScalingBody,
        response: response(D.CdcScalingResult),
      },
    },
    async (request) => ok(request, await cdcScaling.update(scopeOf(request), request.body)),
  );
}
