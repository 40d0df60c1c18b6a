import { type Static, Type as T } from '@sinclair/typebox';
import { StrictObject, StringEnum } from '../../schema/index.js';
import { PIPE_COMMANDS } from '../state.js';
import { Columns, FieldMappings, Scaling, Settings, SettingsMap } from './pipe.js';
import {
  KafkaSource,
  KinesisSource,
  ObjectStorageSource,
  PostgresSettings,
  PostgresSource,
  SchemaRegistry,
  TableMapping,
} from './sources.js';

const pick = <S extends Parameters<typeof T.Pick>[0]>(schema: S, keys: string[]) =>
  T.Partial(T.Pick(schema, keys as never), { additionalProperties: false, minProperties: 1 });

/**
 * Fields Terraform sends back on every update although they cannot change (README, "Pipes"):
 * accepted when equal to the stored value, a 400 naming them when changed (update.ts).
 */
export const IMMUTABLE_SOURCE_FIELDS = {
  kafka: [] as string[],
  objectStorage: [
    'type',
    'format',
    'url',
    'isContinuous',
    'skipInitialLoad',
    'startAfter',
    'path',
    'azureContainerName',
  ],
  kinesis: ['format', 'streamName', 'region', 'iteratorType', 'timestamp', 'useEnhancedFanOut'],
  postgres: ['disableTls', 'skipCertVerification'],
} as const;

/**
 * Where a PostgreSQL pipe reads from: changed only while the pipe is stopped, and only to reach the
 * same server with the pipe's slot still there (runtime/update-checks.ts).
 */
export const POSTGRES_SERVER_FIELDS = ['host', 'port', 'database'] as const;

/** Postgres settings a PATCH changes in place: each is read again when the worker restarts. */
export const CHANGEABLE_POSTGRES_SETTINGS = [
  'syncIntervalSeconds',
  'pullBatchSize',
  'initialLoadParallelism',
  'snapshotNumberOfParallelTables',
  'snapshotNumRowsPerPartition',
] as const;

/** Postgres settings fixed at create (Terraform sends them all back on every update), and why. */
export const FIXED_POSTGRES_SETTINGS: Record<string, string> = {
  replicationMode: 'the mode decides whether the pipe has a replication slot and a snapshot',
  publicationName: 'the slot streams the tables of the publication the pipe started with',
  replicationSlotName: "the slot holds the pipe's position, and another slot is another position",
  allowNullableColumns: "the target tables' columns were made with it",
  enableFailoverSlots: 'the replication slot was made with it',
  deleteOnMerge: 'the target tables were made with it',
};

/**
 * PATCH /pipes/{id}: what may change after create (README, "Pipes"): the
 * name, a source's credentials and authentication, destination columns, field mappings, settings,
 * and a postgres pipe's table mappings while it is stopped; and the source object whole, as
 * Terraform sends it, with its immutable fields unchanged.
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
                ...pick(KafkaSource, [
                  'authentication',
                  'iamRole',
                  'caCertificate',
                  'credentials',
                  'reversePrivateEndpointIds',
                ]).properties,
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
              ...IMMUTABLE_SOURCE_FIELDS.objectStorage,
            ]),
          ),
          kinesis: T.Optional(
            pick(KinesisSource, [
              'authentication',
              'iamRole',
              'accessKey',
              ...IMMUTABLE_SOURCE_FIELDS.kinesis,
            ]),
          ),
          postgres: T.Optional(
            StrictObject(
              {
                ...pick(PostgresSource, [
                  'authentication',
                  'iamRole',
                  'credentials',
                  'caCertificate',
                  'tlsHost',
                  ...IMMUTABLE_SOURCE_FIELDS.postgres,
                  ...POSTGRES_SERVER_FIELDS,
                ]).properties,
                settings: T.Optional(T.Partial(PostgresSettings, { additionalProperties: false })),
                tableMappingsToAdd: T.Optional(T.Array(TableMapping, { minItems: 1 })),
                tableMappingsToRemove: T.Optional(T.Array(TableMapping, { minItems: 1 })),
              },
              { minProperties: 1 },
            ),
          ),
          validateSamples: T.Optional(T.Boolean({ description: 'Request only; sent by Terraform' })),
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
