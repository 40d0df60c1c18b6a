import type { TSchema } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';

/** Made once per schema, then per record object: the JSON of each record under that schema. */
const jsonBySchema = new WeakMap<TSchema, WeakMap<object, string>>();

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * A record's JSON, made with the route's serializer for `schema` once per record object. The
 * domains hand out the same object for as long as the record is unchanged (`toRecord` in
 * src/pipes/model.ts and src/alerts/alerts-service.ts; a change stores a new row, and so a new
 * record), so a GET of an unchanged record sends the text made the first time: serializing it
 * again was about a tenth of a GET's CPU (bench/api.ts).
 */
export function recordJson(reply: FastifyReply, record: object, schema: TSchema): string {
  let made = jsonBySchema.get(schema);
  if (!made) {
    made = new WeakMap();
    jsonBySchema.set(schema, made);
  }
  let json = made.get(record);
  if (json === undefined) {
    json = reply.compileSerializationSchema(schema)(record as Record<string, unknown>);
    made.set(record, json);
  }
  return json;
}

/** Sends `json`, already JSON, as the reply: Fastify sends a string of a JSON type as it is. */
export function asJson(reply: FastifyReply, json: string): string {
  reply.type(JSON_CONTENT_TYPE);
  return json;
}
