import { Type as T } from '@sinclair/typebox';
import { Integer, NonEmpty, StrictObject, StringEnum } from '../../schema/index.js';
import * as E from './enums.js';

const UsernamePassword = StrictObject(
  { username: NonEmpty(), password: NonEmpty() },
  { description: 'Secret: stored encrypted, never returned' },
);

export const AccessKey = StrictObject(
  { accessKeyId: NonEmpty(), secretKey: NonEmpty() },
  { description: 'Secret: stored encrypted, never returned' },
);

/** Every Kafka credential variant; which fields are needed follows `authentication` (validate.ts). */
export const KafkaCredentials = StrictObject(
  {
    username: T.Optional(NonEmpty()),
    password: T.Optional(NonEmpty()),
    accessKeyId: T.Optional(NonEmpty()),
    secretKey: T.Optional(NonEmpty()),
    connectionString: T.Optional(NonEmpty()),
    certificate: T.Optional(NonEmpty()),
    privateKey: T.Optional(NonEmpty()),
  },
  { description: 'Secret: stored encrypted, never returned. The variant follows `authentication`.' },
);

export const SchemaRegistry = StrictObject({
  url: T.String({ format: 'uri', description: 'https URL of the schema registry' }),
  authentication: T.Optional(StringEnum(['PLAIN'] as const)),
  caCertificate: T.Optional(NonEmpty()),
  credentials: T.Optional(UsernamePassword),
});

export const KafkaSource = StrictObject({
  type: T.Optional(StringEnum(E.KAFKA_TYPES, { default: 'kafka' })),
  format: StringEnum(E.KAFKA_FORMATS),
  brokers: NonEmpty({ description: 'Comma-separated host:port list' }),
  topics: NonEmpty({ description: 'Comma-separated topic names' }),
  consumerGroup: T.Optional(NonEmpty({ description: 'Default pipes-<pipe id>' })),
  authentication: T.Optional(StringEnum(E.KAFKA_AUTHENTICATIONS, { default: 'PLAIN' })),
  iamRole: T.Optional(NonEmpty()),
  offset: T.Optional(
    StrictObject({
      strategy: T.Optional(StringEnum(E.KAFKA_OFFSET_STRATEGIES)),
      timestamp: T.Optional(
        T.String({
          pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}$',
          description: 'a UTC date-time to the minute, as 2021-01-01T00:00',
        }),
      ),
    }),
  ),
  schemaRegistry: T.Optional(SchemaRegistry),
  caCertificate: T.Optional(NonEmpty()),
  reversePrivateEndpointIds: T.Optional(T.Array(NonEmpty())),
  credentials: T.Optional(KafkaCredentials),
  exactlyOnce: T.Optional(T.Boolean({ description: 'Create only' })),
});

export const ObjectStorageSource = StrictObject({
  type: T.Optional(StringEnum(E.OBJECT_STORAGE_TYPES, { default: 's3' })),
  format: StringEnum(E.OBJECT_STORAGE_FORMATS),
  url: T.Optional(NonEmpty({ description: 'URL of the files; may contain the wildcards *, ? and **' })),
  delimiter: T.Optional(T.String({ minLength: 1, maxLength: 1 })),
  compression: T.Optional(StringEnum(E.COMPRESSIONS)),
  isContinuous: T.Optional(T.Boolean()),
  queueUrl: T.Optional(T.String({ format: 'uri' })),
  authentication: T.Optional(StringEnum(E.OBJECT_STORAGE_AUTHENTICATIONS)),
  iamRole: T.Optional(NonEmpty()),
  connectionString: T.Optional(NonEmpty({ description: 'Secret (Azure): stored encrypted, never returned' })),
  path: T.Optional(NonEmpty({ description: 'Azure blob path; may contain wildcards' })),
  azureContainerName: T.Optional(NonEmpty()),
  accessKey: T.Optional(AccessKey),
  serviceAccountKey: T.Optional(
    NonEmpty({ description: 'Secret (gcs, base64): stored encrypted, never returned' }),
  ),
  skipInitialLoad: T.Optional(T.Boolean()),
  startAfter: T.Optional(NonEmpty({ description: 'Ingest only keys lexically after this one' })),
});

export const KinesisSource = StrictObject({
  streamName: NonEmpty(),
  region: NonEmpty(),
  format: StringEnum(E.KINESIS_FORMATS),
  iteratorType: T.Optional(StringEnum(E.KINESIS_ITERATOR_TYPES, { default: 'TRIM_HORIZON' })),
  timestamp: T.Optional(
    T.Union([Integer(0), T.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2})?Z?$' })], {
      description: 'For AT_TIMESTAMP: UNIX seconds, or YYYY-MM-DDThh:mm (UTC) as Terraform sends it',
    }),
  ),
  useEnhancedFanOut: T.Optional(T.Boolean()),
  authentication: T.Optional(StringEnum(E.KINESIS_AUTHENTICATIONS)),
  iamRole: T.Optional(NonEmpty()),
  accessKey: T.Optional(AccessKey),
});

export const PostgresSettings = StrictObject({
  syncIntervalSeconds: T.Optional(Integer(1)),
  pullBatchSize: T.Optional(Integer(1)),
  publicationName: T.Optional(NonEmpty()),
  replicationSlotName: T.Optional(NonEmpty()),
  allowNullableColumns: T.Optional(T.Boolean()),
  initialLoadParallelism: T.Optional(Integer(1)),
  snapshotNumRowsPerPartition: T.Optional(Integer(1000)),
  snapshotNumberOfParallelTables: T.Optional(Integer(1)),
  enableFailoverSlots: T.Optional(T.Boolean()),
  replicationMode: T.Optional(StringEnum(E.REPLICATION_MODES, { default: 'cdc' })),
  deleteOnMerge: T.Optional(T.Boolean()),
});

export const TableMapping = StrictObject({
  sourceSchemaName: T.Optional(NonEmpty({ description: 'Default public' })),
  sourceTable: NonEmpty(),
  targetTable: NonEmpty(),
  excludedColumns: T.Optional(T.Array(NonEmpty())),
  useCustomSortingKey: T.Optional(T.Boolean()),
  sortingKeys: T.Optional(T.Array(NonEmpty())),
  tableEngine: T.Optional(StringEnum(E.POSTGRES_TABLE_ENGINES)),
  partitionKey: T.Optional(NonEmpty()),
  partitionByExpr: T.Optional(NonEmpty()),
});

export const PostgresSource = StrictObject({
  type: T.Optional(StringEnum(E.POSTGRES_TYPES, { default: 'postgres' })),
  host: NonEmpty(),
  port: Integer(1, 65535),
  database: NonEmpty(),
  authentication: T.Optional(StringEnum(E.POSTGRES_AUTHENTICATIONS, { default: 'basic' })),
  iamRole: T.Optional(NonEmpty()),
  tlsHost: T.Optional(NonEmpty()),
  caCertificate: T.Optional(NonEmpty()),
  disableTls: T.Optional(T.Boolean()),
  skipCertVerification: T.Optional(T.Boolean()),
  settings: T.Optional(PostgresSettings),
  tableMappings: T.Array(TableMapping, { minItems: 1 }),
  credentials: T.Optional(UsernamePassword),
});

export const Source = StrictObject({
  validateSamples: T.Optional(T.Boolean({ description: 'Request only: read a few records at create' })),
  kafka: T.Optional(KafkaSource),
  objectStorage: T.Optional(ObjectStorageSource),
  kinesis: T.Optional(KinesisSource),
  postgres: T.Optional(PostgresSource),
});
