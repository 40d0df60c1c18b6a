import { Readable } from 'node:stream';
import { Type as T } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { RowStream } from '../../engine/index.js';
import type { QueryService } from '../../query/index.js';
import { principalOf } from '../auth.js';
import { Envelope, V1_ERRORS } from '../envelope.js';

const Params = T.Object({ organizationId: T.String(), serviceId: T.String() });
type Params = { organizationId: string; serviceId: string };

const QueryResultSchema = T.Object({
  columns: T.Array(T.Object({ name: T.String(), type: T.String() })),
  rows: T.Array(T.Record(T.String(), T.Unknown())),
});

/** POST .../services/{serviceId}/query (an addition to the interface): one SQL statement. */
export function queryRoutes(app: FastifyInstance, query: QueryService): void {
  app.post<{ Params: Params }>(
    '/v1/organizations/:organizationId/services/:serviceId/query',
    {
      config: { access: { role: 'read-only' } },
      schema: {
        tags: ['services'],
        summary: 'Run one SQL statement on a service (read-only unless the key is admin; 30 s limit)',
        params: Params,
        body: T.Object({ sql: T.String({ minLength: 1 }) }),
        response: { 200: Envelope(QueryResultSchema), ...V1_ERRORS },
      },
    },
    async (request, reply) => {
      const result = await query.run(request.params, principalOf(request).role, request.body);
      // The statement has ended: its status is known, and its rows follow as they are read.
      const body = Readable.from(envelopeOf(request.id, result));
      body.on('close', () => void result.close());
      return reply.type('application/json; charset=utf-8').send(body);
    },
  );
}

/**
 * The success envelope `{status, requestId, result: {columns, rows}}` around the rows as they are
 * read, so a result of any size passes through the server without being held whole.
 */
async function* envelopeOf(requestId: string, result: RowStream): AsyncGenerator<Buffer | string> {
  yield `{"status":200,"requestId":${JSON.stringify(requestId)},"result":{"columns":${JSON.stringify(result.columns)},"rows":[`;
  yield* result.rowsJson;
  yield ']}}';
}
