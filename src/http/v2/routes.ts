import { Type as T, type TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  type AlertsService,
  type DashboardsService,
  alertSchemas as S,
  type SourcesService,
  type WebhooksService,
} from '../../alerts/index.js';
import { asJson, recordJson } from '../record-json.js';
import { scopeOf } from './auth.js';

const Message = T.Object(
  {
    message: T.String(),
    code: T.String({
      description:
        'The stable code of the condition (SLUICE_ERR_*, README "Errors"); match it, not the message',
    }),
  },
  { $id: 'V2Message' },
);
export const ERRORS = { 400: Message, 401: Message, 404: Message, 409: Message, 429: Message, 500: Message };
export const IdParams = T.Object({ id: T.String() });
export const Data = <S extends TSchema>(schema: S) => T.Object({ data: schema });
const Listed = <S extends TSchema>(schema: S) =>
  T.Object({
    data: T.Array(schema),
    meta: T.Object({ total: T.Integer(), limit: T.Integer(), offset: T.Integer() }),
  });

/** The CRUD every resource of the alerts area offers (README, "Alerts area"). */
interface Crud<R> {
  list(scope: ReturnType<typeof scopeOf>, query: unknown): Promise<unknown>;
  get(scope: ReturnType<typeof scopeOf>, id: string): Promise<R>;
  create(scope: ReturnType<typeof scopeOf>, body: unknown): Promise<R>;
  replace(scope: ReturnType<typeof scopeOf>, id: string, body: unknown): Promise<R>;
  delete(scope: ReturnType<typeof scopeOf>, id: string): Promise<void>;
}

const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;

/** GET list, GET one, POST, PUT (full replace), DELETE of one resource, answered as `{data}`. */
function crudRoutes<R extends object>(
  app: FastifyInstance,
  path: string,
  tag: string,
  service: Crud<R>,
  schemas: {
    body: TSchema;
    record: TSchema;
    /** The service hands out the same record object while it is unchanged: its JSON is made once (record-json.ts). */
    sharedRecords?: boolean;
  },
): void {
  const tags = [tag];
  app.get(
    `${path}`,
    {
      schema: {
        tags,
        summary: `List ${tag}`,
        querystring: S.ListQuery,
        response: { 200: Listed(schemas.record), ...ERRORS },
      },
    },
    async (request) => service.list(scopeOf(request), request.query),
  );
  app.get(
    `${path}/:id`,
    {
      schema: {
        tags,
        summary: `Get one of ${tag}`,
        params: IdParams,
        response: { 200: Data(schemas.record), ...ERRORS },
      },
    },
    async (request, reply) => {
      const data = await service.get(scopeOf(request), idOf(request));
      if (!schemas.sharedRecords) return { data };
      return asJson(reply, `{"data":${recordJson(reply, data, schemas.record)}}`);
    },
  );
  app.post(
    `${path}`,
    {
      schema: {
        tags,
        summary: `Create one of ${tag}`,
        body: schemas.body,
        response: { 200: Data(schemas.record), ...ERRORS },
      },
    },
    async (request) => ({ data: await service.create(scopeOf(request), request.body) }),
  );
  app.put(
    `${path}/:id`,
    {
      schema: {
        tags,
        summary: `Replace one of ${tag} (a full replace, not a merge)`,
        params: IdParams,
        body: schemas.body,
        response: { 200: Data(schemas.record), ...ERRORS },
      },
    },
    async (request) => ({ data: await service.replace(scopeOf(request), idOf(request), request.body) }),
  );
  app.delete(
    `${path}/:id`,
    {
      schema: {
        tags,
        summary: `Delete one of ${tag}`,
        params: IdParams,
        response: { 200: T.Object({}), ...ERRORS },
      },
    },
    async (request) => {
      await service.delete(scopeOf(request), idOf(request));
      return {};
    },
  );
}

export function alertsAreaRoutes(
  app: FastifyInstance,
  deps: {
    alerts: AlertsService;
    webhooks: WebhooksService;
    sources: SourcesService;
    dashboards: DashboardsService;
  },
): void {
  app.get(
    '/api/v2',
    {
      schema: {
        tags: ['alerts area'],
        summary: 'The API version and the calling user',
        response: {
          200: T.Object({
            version: T.Literal('v2'),
            user: T.Object({ id: T.String(), name: T.String(), team: T.String() }),
          }),
        },
      },
    },
    async (request) => {
      const user = request.user;
      return {
        version: 'v2',
        user: { id: user?.userId ?? '', name: user?.userName ?? '', team: user?.teamId ?? '' },
      };
    },
  );
  crudRoutes(app, '/api/v2/alerts', 'alerts', deps.alerts, {
    body: S.AlertBody,
    record: S.AlertRecord,
    sharedRecords: true,
  });
  app.get(
    `/api/v2/alerts/:id/history`,
    {
      schema: {
        tags: ['alerts'],
        summary: 'Evaluations of an alert, newest window first (an addition)',
        params: IdParams,
        querystring: S.ListQuery,
        response: {
          200: Listed(
            T.Object({
              windowStart: T.String(),
              windowEnd: T.String(),
              group: T.Union([T.String(), T.Null()]),
              state: T.Union([T.String(), T.Null()]),
              value: T.Union([T.Number(), T.Null()]),
              threshold: T.Number(),
              error: T.Union([T.String(), T.Null()]),
              errorCode: T.Union([T.String(), T.Null()], {
                description:
                  'The condition of `error` (SLUICE_ERR_*, as the API errors carry); null when evaluated',
              }),
              attempts: T.Integer({
                description: 'Ticks that tried this window and failed (1 when evaluated)',
              }),
              evaluatedAt: T.String(),
            }),
          ),
          ...ERRORS,
        },
      },
    },
    async (request) => deps.alerts.history(scopeOf(request), idOf(request), request.query),
  );
  crudRoutes(app, '/api/v2/webhooks', 'webhooks', deps.webhooks, {
    body: S.WebhookBody,
    record: S.WebhookRecord,
  });
  crudRoutes(app, '/api/v2/sources', 'sources', deps.sources, { body: S.SourceBody, record: S.SourceRecord });
  crudRoutes(app, '/api/v2/dashboards', 'dashboards', deps.dashboards, {
    body: S.DashboardBody,
    record: S.DashboardRecord,
  });
}
