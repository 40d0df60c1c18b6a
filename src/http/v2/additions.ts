import { Type as T } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import {
  GRANULARITIES,
  MAX_BUCKETS,
  type TileDataService,
  type WebhookNotifier,
} from '../../alerts/index.js';
import { scopeOf } from './auth.js';
import { Data, ERRORS, IdParams } from './routes.js';

const TileDataQuery = T.Object({
  from: T.Optional(
    T.String({ format: 'date-time', description: 'Start (ISO 8601); default: an hour before to' }),
  ),
  to: T.Optional(T.String({ format: 'date-time', description: 'End (ISO 8601); default: now' })),
  granularity: T.Optional(
    T.Union(
      GRANULARITIES.map((g) => T.Literal(g)),
      {
        description: `Bucket size; default: the finest with at most 300 buckets; more than ${MAX_BUCKETS} is a 400`,
      },
    ),
  ),
});

const TileDataRecord = T.Object({
  from: T.String({ description: 'from, widened to a whole bucket (aligned to the epoch, as alert windows)' }),
  to: T.String({ description: 'to, widened to a whole bucket' }),
  granularity: T.String(),
  series: T.Array(
    T.Object({
      select: T.Integer({ description: 'Which select of the tile; alerts evaluate select 0' }),
      label: T.String(),
      group: T.Optional(T.String({ description: "The group-by's value, when the tile groups" })),
      points: T.Array(
        T.Object({
          t: T.String({ description: "The bucket's start" }),
          value: T.Number({ description: 'What an alert on the tile reads for this window; 0 when empty' }),
        }),
      ),
    }),
  ),
  truncated: T.Boolean({ description: 'Groups beyond the 20 largest of a select were left out' }),
});

const TestSendRecord = T.Object({
  ok: T.Boolean({ description: 'The webhook answered 2xx' }),
  status: T.Optional(T.Integer({ description: "The webhook's HTTP status, when it answered" })),
  error: T.Optional(T.String({ description: 'Why it was not taken' })),
});

/**
 * Additions to the original API that the console draws with (README, "Alerts area"): a tile's
 * series over a time range, and a webhook's test send.
 */
export function additionRoutes(
  app: FastifyInstance,
  deps: { tileData: TileDataService; notifier: WebhookNotifier },
): void {
  app.get(
    '/api/v2/dashboards/:id/tiles/:tileId/data',
    {
      schema: {
        tags: ['dashboards'],
        summary: "A tile's series over a time range, as alerts on it read them (an addition)",
        params: T.Object({ id: T.String(), tileId: T.String() }),
        querystring: TileDataQuery,
        response: { 200: Data(TileDataRecord), ...ERRORS },
      },
    },
    async (request) => {
      const { id, tileId } = request.params as { id: string; tileId: string };
      return { data: await deps.tileData.read(scopeOf(request), id, tileId, request.query) };
    },
  );
  app.post(
    '/api/v2/webhooks/:id/test',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Send one test notification now; no alert changes (an addition)',
        params: IdParams,
        response: { 200: Data(TestSendRecord), ...ERRORS },
      },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      return { data: await deps.notifier.sendTest(scopeOf(request), id) };
    },
  );
}
