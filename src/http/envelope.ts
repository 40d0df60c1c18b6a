import { Type as T, type TSchema } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { asJson, recordJson } from './record-json.js';

/** Success envelope of the pipes area: `{status: 200, requestId, result}` (README, "API"). */
export function ok<R>(request: FastifyRequest, result: R) {
  return { status: 200, requestId: request.id, result };
}

/** `ok(request, record)` as text, the record's JSON made once per record object (record-json.ts). */
export function okRecord(request: FastifyRequest, reply: FastifyReply, record: object, schema: TSchema) {
  const json = recordJson(reply, record, schema);
  return asJson(reply, `{"status":200,"requestId":${JSON.stringify(request.id)},"result":${json}}`);
}

export const Envelope = <S extends TSchema>(result: S) =>
  T.Object({ status: T.Integer({ const: 200 }), requestId: T.String({ format: 'uuid' }), result });

export const EmptyEnvelope = T.Object({
  status: T.Integer({ const: 200 }),
  requestId: T.String({ format: 'uuid' }),
});

/** Error envelope of the pipes area (README, "API"). */
export const ErrorEnvelope = T.Object(
  {
    status: T.Integer(),
    error: T.String({
      description:
        '"<STATUS NAME>: <message>", for example "BAD_REQUEST: scaling.replicas: Not between 1 and 40"; its words stay as they were, but match `code` instead',
    }),
    code: T.String({
      description:
        'The stable code of the condition, SLUICE_ERR_* (README, "Error codes"), for example SLUICE_ERR_VALIDATION or SLUICE_ERR_PIPE_NOT_FOUND',
    }),
    requestId: T.String({ format: 'uuid' }),
  },
  { $id: 'ErrorEnvelope' },
);

/** The error responses every authenticated /v1 route can give, for the OpenAPI document. */
export const V1_ERRORS = {
  400: ErrorEnvelope,
  401: ErrorEnvelope,
  403: ErrorEnvelope,
  404: ErrorEnvelope,
  409: ErrorEnvelope,
  413: ErrorEnvelope,
  415: ErrorEnvelope,
  429: ErrorEnvelope,
  500: ErrorEnvelope,
};
