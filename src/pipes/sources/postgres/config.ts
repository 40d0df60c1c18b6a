import { type Static, Type as T } from '@sinclair/typebox';
import { Integer, NonEmpty, StrictObject, StringEnum, UsernamePassword } from '../../../schema/index.js';

/** Allowed values, from the hosted service's API and Terraform provider (README, "Pipes"). */
export const POSTGRES_TYPES = [
  'postgres',
  'supabase',
  'neon',
  'alloydb',
  'planetscale',
  'rdspostgres',
  'aurorapostgres',
  'cloudsqlpostgres',
  'azurepostgres',
  'crunchybridge',
  'tigerdata',
] as const;
export const POSTGRES_AUTHENTICATIONS = ['basic', 'IAM_ROLE'] as const;
export const REPLICATION_MODES = ['cdc', 'snapshot', 'cdc_only'] as const;
export const POSTGRES_TABLE_ENGINES = ['MergeTree', 'ReplacingMergeTree', 'Null'] as const;

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
  replicationMode: T.Optional(StringEnum(REPLICATION_MODES, { default: 'cdc' })),
  deleteOnMerge: T.Optional(T.Boolean()),
});

export const TableMapping = StrictObject({
  sourceSchemaName: T.Optional(NonEmpty({ description: 'Default public' })),
  sourceTable: NonEmpty(),
  targetTable: NonEmpty(),
  excludedColumns: T.Optional(T.Array(NonEmpty())),
  useCustomSortingKey: T.Optional(T.Boolean()),
  sortingKeys: T.Optional(T.Array(NonEmpty())),
  tableEngine: T.Optional(StringEnum(POSTGRES_TABLE_ENGINES)),
  partitionKey: T.Optional(NonEmpty()),
  partitionByExpr: T.Optional(NonEmpty()),
});
export type TableMappingConfig = Static<typeof TableMapping>;

export const PostgresSource = StrictObject({
  type: T.Optional(StringEnum(POSTGRES_TYPES, { default: 'postgres' })),
  host: NonEmpty(),
  port: Integer(1, 65535),
  database: NonEmpty(),
  authentication: T.Optional(StringEnum(POSTGRES_AUTHENTICATIONS, { default: 'basic' })),
  iamRole: T.Optional(NonEmpty()),
  tlsHost: T.Optional(NonEmpty()),
  caCertificate: T.Optional(NonEmpty()),
  disableTls: T.Optional(T.Boolean()),
  skipCertVerification: T.Optional(T.Boolean()),
  settings: T.Optional(PostgresSettings),
  tableMappings: T.Array(TableMapping, { minItems: 1 }),
  credentials: T.Optional(UsernamePassword),
});
export type PostgresConfig = Static<typeof PostgresSource>;

/** Fields fixed at create that Terraform sends back on every update, with their assumed values. */
export const POSTGRES_IMMUTABLE = { disableTls: false, skipCertVerification: false };

/**
 * Where a PostgreSQL pipe reads from: changed only while the pipe is stopped, and only to reach the
 * same server with the pipe's slot still there (runtime/update-checks.ts).
 */
export const POSTGRES_SERVER_FIELDS = ['host', 'port', 'database'] as const;

/** Postgres settings fixed at create (Terraform sends them all back on every update), and why. */
export const FIXED_POSTGRES_SETTINGS: Record<string, string> = {
  replicationMode: 'the mode decides whether the pipe has a replication slot and a snapshot',
  publicationName: 'the slot streams the tables of the publication the pipe started with',
  replicationSlotName: "the slot holds the pipe's position, and another slot is another position",
  allowNullableColumns: "the target tables' columns were made with it",
  enableFailoverSlots: 'the replication slot was made with it',
  deleteOnMerge: 'the target tables were made with it',
};

/** What the hosted service assumes for a fixed setting a pipe was created without. */
export const FIXED_SETTING_DEFAULTS: Record<string, unknown> = {
  replicationMode: 'cdc',
  allowNullableColumns: false,
  enableFailoverSlots: false,
  deleteOnMerge: false,
};

/**
 * PATCH: credentials and authentication, TLS, the server's address while stopped, the settings,
 * and table mappings to add or remove while stopped (README, "Pipes").
 */
export const PostgresPatch = StrictObject(
  {
    ...T.Partial(
      T.Pick(PostgresSource, [
        'authentication',
        'iamRole',
        'credentials',
        'caCertificate',
        'tlsHost',
        'disableTls',
        'skipCertVerification',
        ...POSTGRES_SERVER_FIELDS,
      ]),
    ).properties,
    settings: T.Optional(T.Partial(PostgresSettings, { additionalProperties: false })),
    tableMappingsToAdd: T.Optional(T.Array(TableMapping, { minItems: 1 })),
    tableMappingsToRemove: T.Optional(T.Array(TableMapping, { minItems: 1 })),
  },
  { minProperties: 1 },
);
