import { type Static, Type as T } from '@sinclair/typebox';
import { StrictObject, StringEnum } from '../../schema/index.js';
import { PIPE_COMMANDS } from '../state.js';
import { Columns, FieldMappings, Scaling, Settings, SettingsMap } from './pipe.js';
import {
  KafkaSource,
  KinesisSource,
  ObjectStorageSource,
  PostgresSource,
  SchemaRegistry,
  TableMapping,
} from './sources.js';

const pick = <S extends Parameters<typeof T.Pick>[0]>(schema: S, keys: string[]) =>
  T.Partial(T.Pick(schema, keys as never), { additionalProperties: false, minProperties: 1 });

/**
 * PATCH /pipes/{id}: what may change after create (reference/pipes.md, "The other endpoints"): the
 * name, a source's credentials and authentication, destination columns, field mappings, settings,
 * and a postgres pipe's table mappings while it is stopped.
 */
export const UpdatePipeBody = StrictObject(
  {
    name: T.Optional(T.String({ minLength: 1, maxLength: 255 })),
    source: T.Optional(
      StrictObject(
        {
          kafka: T.Optional(
            StrictObject(
              {
                ...pick(KafkaSource, ['authentication', 'iamRole', 'caCertificate', 'credentials'])
                  .properties,
                schemaRegistry: T.Optional(
                  pick(SchemaRegistry, ['authentication', 'caCertificate', 'credentials']),
                ),
              },
              { minProperties: 1 },
            ),
          ),
          objectStorage: T.Optional(
            pick(ObjectStorageSource, [
              'authentication',
              'iamRole',
              'accessKey',
              'connectionString',
              'serviceAccountKey',
            ]),
          ),
          kinesis: T.Optional(pick(KinesisSource, ['authentication', 'iamRole', 'accessKey'])),
          postgres: T.Optional(
            StrictObject(
              {
                ...pick(PostgresSource, [
                  'authentication',
                  'iamRole',
                  'credentials',
                  'caCertificate',
                  'tlsHost',
                ]).properties,
                tableMappingsToAdd: T.Optional(T.Array(TableMapping, { minItems: 1 })),
                tableMappingsToRemove: T.Optional(T.Array(TableMapping, { minItems: 1 })),
              },
              { minProperties: 1 },
            ),
          ),
        },
        { minProperties: 1 },
      ),
    ),
    destination: T.Optional(StrictObject({ columns: Columns })),
    fieldMappings: T.Optional(FieldMappings),
    settings: T.Optional(Settings),
  },
  { minProperties: 1 },
);
export type UpdatePipeBody = Static<typeof UpdatePipeBody>;

export const StateCommandBody = StrictObject({ command: StringEnum(PIPE_COMMANDS) });
export type StateCommandBody = Static<typeof StateCommandBody>;

export const ScalingBody = Scaling;
export type ScalingBody = Static<typeof Scaling>;

export const SettingsBody = SettingsMap;
export type SettingsBody = Static<typeof SettingsBody>;
