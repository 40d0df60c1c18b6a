import { type Static, Type as T } from '@sinclair/typebox';
import { StrictObject } from '../../schema/index.js';
import { PIPE_STATES } from '../state.js';
import { Destination, FieldMappings, Scaling, SettingsMap } from './pipe.js';
import {
  KafkaSource,
  KinesisSource,
  ObjectStorageSource,
  PostgresSource,
  SchemaRegistry,
} from './sources.js';

/**
 * The pipe record returned by every pipe endpoint: the request's configuration without its secrets,
 * `validateSamples` or `roles` (README, "Pipes"). Used as the response
 * schema, so the serializer also drops anything that is not listed here.
 */
export const PipeRecord = StrictObject({
  id: T.String({ format: 'uuid' }),
  serviceId: T.String({ format: 'uuid' }),
  name: T.String(),
  state: T.Unsafe<string>({ type: 'string', enum: [...PIPE_STATES] }),
  scaling: T.Partial(Scaling),
  source: StrictObject({
    kafka: T.Optional(
      T.Composite([
        T.Omit(KafkaSource, ['credentials', 'schemaRegistry']),
        T.Object({ schemaRegistry: T.Optional(T.Omit(SchemaRegistry, ['credentials'])) }),
      ]),
    ),
    objectStorage: T.Optional(
      T.Omit(ObjectStorageSource, ['accessKey', 'connectionString', 'serviceAccountKey']),
    ),
    kinesis: T.Optional(T.Omit(KinesisSource, ['accessKey'])),
    postgres: T.Optional(T.Omit(PostgresSource, ['credentials'])),
  }),
  destination: T.Omit(Destination, ['roles']),
  fieldMappings: FieldMappings,
  settings: SettingsMap,
  createdAt: T.String({ format: 'date-time' }),
  updatedAt: T.String({ format: 'date-time' }),
});

export type PipeRecord = Static<typeof PipeRecord>;
