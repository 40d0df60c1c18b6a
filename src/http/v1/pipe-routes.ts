import { Type as T } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HealthAlertsMade, HealthAlertsRequest, type PipeHealth } from '../../pipe-health/index.js';
import { type PipesService, pipeSchemas as S, sourceStatusFields } from '../../pipes/index.js';
import { Nullable } from '../../schema/index.js';
import { EmptyEnvelope, ok, okRecord, V1_ERRORS } from '../envelope.js';
import {
  readAccess as read,
  enveloped as response,
  SERVICE_PATH,
  ServiceParams,
  scopeOf,
  pipeTags as tags,
  writeAccess as write,
} from './service-routes.js';

const PipeParams = T.Object({ organizationId: T.String(), serviceId: T.String(), pipeId: T.String() });
type PipeParams = { organizationId: string; serviceId: string; pipeId: string };

/** GET .../status: the runtime's fields, then what each kind the server runs adds (its StatusShape). */
const RUNTIME_STATUS_FIELDS = {
  id: T.String(),
  state: T.String(),
  reason: Nullable(T.String()),
  filesDone: T.Number(),
  filesPending: T.Number(),
  rowsWritten: T.Number(),
  bytesWritten: T.Number(),
  badRecords: T.Number(),
  lastInsertAt: Nullable(T.String()),
  lastError: Nullable(T.String()),
  lastErrorCode: Nullable(
    T.String({
      description:
        'The stable code of lastError\'s condition (SLUICE_ERR_*, README "Errors"); null with no error, or for one recorded before codes',
    }),
  ),
  lastErrorAt: Nullable(T.String()),
  lastHour: T.Array(
    T.Object({
      minute: T.String(),
      rowsPerSecond: T.Number(),
      lag: Nullable(T.Number()),
    }),
    {
      description:
        'The last hour from the pipe\'s history (README, "Pipe history"), a minute each, oldest first: rows written per second (0 in a minute without rows) and the largest lag seen (null where nothing measured it)',
    },
  ),
  rowsPerSecond: T.Optional(
    T.Number({ description: 'While the pipe runs: rows committed per second over the last minute' }),
  ),
  bytesPerSecond: T.Optional(
    T.Number({ description: 'While the pipe runs: source bytes committed per second over the last minute' }),
  ),
};

const BASE = `${SERVICE_PATH}/pipes`;

function pipeIdOf(request: FastifyRequest): string {
  return (request.params as PipeParams).pipeId;
}

/** The pipe endpoints of the hosted service and the rest a user needs (README, "Pipes"). */
export function pipeRoutes(app: FastifyInstance, pipes: PipesService, health: PipeHealth): void {
  const { CreatePipeBody, PipeRecord } = pipes.schemas;
  app.post(
    BASE,
    {
      config: write,
      schema: {
        tags,
        summary: 'Create a pipe (beta)',
        params: ServiceParams,
        body: T.Object(
          { ...CreatePipeBody.properties, healthAlerts: T.Optional(HealthAlertsRequest) },
          { additionalProperties: false },
        ),
        response: response(
          T.Object({
            ...PipeRecord.properties,
            healthAlerts: T.Optional(HealthAlertsMade),
          }),
        ),
      },
    },
    async (request) => ok(request, await health.createPipe(pipes, scopeOf(request), request.body)),
  );

  app.get(
    BASE,
    {
      config: read,
      schema: {
        tags,
        summary: 'List the pipes of a service',
        params: ServiceParams,
        response: response(T.Array(pipes.schemas.PipeRecord)),
      },
    },
    async (request) => ok(request, await pipes.list(scopeOf(request))),
  );

  app.get(
    `${BASE}/:pipeId`,
    {
      config: read,
      schema: {
        tags,
        summary: 'Get a pipe',
        params: PipeParams,
        response: response(pipes.schemas.PipeRecord),
      },
    },
    async (request, reply) =>
      okRecord(
        request,
        reply,
        await pipes.get(scopeOf(request), pipeIdOf(request)),
        pipes.schemas.PipeRecord,
      ),
  );

  app.patch(
    `${BASE}/:pipeId`,
    {
      config: write,
      schema: {
        tags,
        summary:
          'Update a pipe: name, source credentials and authentication, destination columns, field mappings, settings, postgres table mappings while stopped',
        params: PipeParams,
        body: pipes.schemas.UpdatePipeBody,
        response: response(pipes.schemas.PipeRecord),
      },
    },
    async (request) => ok(request, await pipes.update(scopeOf(request), pipeIdOf(request), request.body)),
  );

  app.delete(
    `${BASE}/:pipeId`,
    {
      config: write,
      schema: {
        tags,
        summary: 'Delete a pipe',
        params: PipeParams,
        response: { 200: EmptyEnvelope, ...V1_ERRORS },
      },
    },
    async (request) => {
      await pipes.delete(scopeOf(request), pipeIdOf(request));
      return { status: 200, requestId: request.id };
    },
  );

  app.patch(
    `${BASE}/:pipeId/state`,
    {
      config: write,
      schema: {
        tags,
        summary:
          'Start, stop or resync a pipe: stop from any state, start from Stopped or Failed, resync for postgres pipes',
        params: PipeParams,
        body: S.StateCommandBody,
        response: response(pipes.schemas.PipeRecord),
      },
    },
    async (request) => ok(request, await pipes.command(scopeOf(request), pipeIdOf(request), request.body)),
  );

  app.patch(
    `${BASE}/:pipeId/scaling`,
    {
      config: write,
      schema: {
        tags,
        summary: 'Change the scaling of a pipe',
        params: PipeParams,
        body: S.ScalingBody,
        response: response(pipes.schemas.PipeRecord),
      },
    },
    async (request) => ok(request, await pipes.scale(scopeOf(request), pipeIdOf(request), request.body)),
  );

  app.get(
    `${BASE}/:pipeId/status`,
    {
      config: read,
      schema: {
        tags,
        summary:
          'Progress of a pipe (an addition): state, reason, files, rows, bytes, bad records, last error',
        params: PipeParams,
        // What each kind's source adds (a stream's offsets and lag, a database pipe's slot).
        response: response(
          T.Object({ ...RUNTIME_STATUS_FIELDS, ...sourceStatusFields(pipes.kinds.connectors()) }),
        ),
      },
    },
    async (request) => ok(request, await pipes.status(scopeOf(request), pipeIdOf(request))),
  );

  app.get(
    `${BASE}/:pipeId/settings`,
    {
      config: read,
      schema: {
        tags,
        summary: 'Get the settings of a pipe',
        params: PipeParams,
        response: response(S.SettingsBody),
      },
    },
    async (request) => ok(request, await pipes.getSettings(scopeOf(request), pipeIdOf(request))),
  );

  app.put(
    `${BASE}/:pipeId/settings`,
    {
      config: write,
      schema: {
        tags,
        summary: 'Replace the settings of a pipe ({} puts every setting back to its default)',
        params: PipeParams,
        body: S.SettingsBody,
        response: response(S.SettingsBody),
      },
    },
    async (request) =>
      ok(request, await pipes.putSettings(scopeOf(request), pipeIdOf(request), request.body)),
  );
}
