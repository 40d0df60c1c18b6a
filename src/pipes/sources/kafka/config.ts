import { type Static, Type as T } from '@sinclair/typebox';
import { NonEmpty, Secret, StrictObject, StringEnum, UsernamePassword } from '../../../schema/index.js';

/** Allowed values, from the hosted service's API and Terraform provider (README, "Pipes"). */
export const KAFKA_TYPES = [
  'kafka',
  'redpanda',
  'msk',
  'gcmk',
  'confluent',
  'warpstream',
  'azureeventhub',
  'dokafka',
] as const;
export const KAFKA_FORMATS = ['JSONEachRow', 'Avro', 'AvroConfluent', 'Protobuf'] as const;
export const KAFKA_AUTHENTICATIONS = [
  'PLAIN',
  'SCRAM-SHA-256',
  'SCRAM-SHA-512',
  'IAM_ROLE',
  'IAM_USER',
  'MUTUAL_TLS',
] as const;
export const KAFKA_OFFSET_STRATEGIES = ['from_beginning', 'from_latest', 'from_timestamp'] as const;

/** Every Kafka credential variant; which fields are needed follows `authentication` (rules.ts). */
export const KafkaCredentials = Secret(
  StrictObject(
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
  ),
);

export const SchemaRegistry = StrictObject({
  url: T.String({ format: 'uri', description: 'https URL of the schema registry' }),
  authentication: T.Optional(StringEnum(['PLAIN'] as const)),
  caCertificate: T.Optional(NonEmpty()),
  credentials: T.Optional(UsernamePassword),
});

export const KafkaSource = StrictObject({
  type: T.Optional(StringEnum(KAFKA_TYPES, { default: 'kafka' })),
  format: StringEnum(KAFKA_FORMATS),
  brokers: NonEmpty({ description: 'Comma-separated host:port list' }),
  topics: NonEmpty({ description: 'Comma-separated topic names' }),
  consumerGroup: T.Optional(NonEmpty({ description: 'Default pipes-<pipe id>' })),
  authentication: T.Optional(StringEnum(KAFKA_AUTHENTICATIONS, { default: 'PLAIN' })),
  iamRole: T.Optional(NonEmpty()),
  offset: T.Optional(
    StrictObject({
      strategy: T.Optional(StringEnum(KAFKA_OFFSET_STRATEGIES)),
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
export type KafkaConfig = Static<typeof KafkaSource>;

const pick = <S extends Parameters<typeof T.Pick>[0]>(schema: S, keys: string[]) =>
  T.Partial(T.Pick(schema, keys as never), { additionalProperties: false, minProperties: 1 });

/** PATCH: credentials, authentication and the schema registry's; nothing else changes. */
export const KafkaPatch = StrictObject(
  {
    ...pick(KafkaSource, [
      'authentication',
      'iamRole',
      'caCertificate',
      'credentials',
      'reversePrivateEndpointIds',
    ]).properties,
    schemaRegistry: T.Optional(pick(SchemaRegistry, ['authentication', 'caCertificate', 'credentials'])),
  },
  { minProperties: 1 },
);
