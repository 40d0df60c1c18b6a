import type { FastifyInstance } from 'fastify';
import { type CdcScalingService, discoverySchemas as D, type PipeDiscovery } from '../../pipes/index.js';
import { ok } from '../envelope.js';
import {
  readAccess as read,
  enveloped as response,
  SERVICE_PATH,
  ServiceParams,
  scopeOf,
  pipeTags as tags,
  writeAccess as write,
} from './service-routes.js';

/**
 * Reading a source before a pipe exists (schema discovery, a PostgreSQL server's tables) and the
 * resources of a service's database pipes (the hosted service's CDC scaling). Discovery uses a
 * source's credentials and reaches its host from the server: as for creating a pipe, read-only
 * keys may not (README, "Discovering a source").
 */
export function discoveryRoutes(
  app: FastifyInstance,
  services: { discovery: PipeDiscovery; cdcScaling: CdcScalingService },
): void {
  const { discovery, cdcScaling } = services;
  app.post(
    `${SERVICE_PATH}/pipes/schemaDiscovery`,
    {
      config: write,
      schema: {
        tags,
        summary:
          "Infer a source's fields and their types from its first records, without creating a pipe (kafka, kinesis, objectStorage; postgres: one table's target columns)",
        params: ServiceParams,
        body: discovery.schemas.SchemaDiscoveryBody,
        response: response(D.SchemaDiscoveryResult),
      },
    },
    async (request) => ok(request, await discovery.discoverSchema(scopeOf(request), request.body)),
  );

  app.post(
    `${SERVICE_PATH}/pipes/postgresTables`,
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
    `${SERVICE_PATH}/pipesCdcScaling`,
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
    `${SERVICE_PATH}/pipesCdcScaling`,
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
