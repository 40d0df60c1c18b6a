/** Allowed values, from the hosted service's API and Terraform provider. */
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

export const OBJECT_STORAGE_TYPES = [
  's3',
  'gcs',
  'dospaces',
  'azureblobstorage',
  'cloudflarer2',
  'ovhobjectstorage',
] as const;
export const OBJECT_STORAGE_FORMATS = [
  'JSONEachRow',
  'JSONAsObject',
  'CSV',
  'CSVWithNames',
  'TabSeparated',
  'TabSeparatedWithNames',
  'Parquet',
  'Avro',
] as const;
export const COMPRESSIONS = ['none', 'gzip', 'gz', 'brotli', 'br', 'xz', 'LZMA', 'zstd', 'auto'] as const;
export const OBJECT_STORAGE_AUTHENTICATIONS = [
  'IAM_ROLE',
  'IAM_USER',
  'SERVICE_ACCOUNT',
  'CONNECTION_STRING',
] as const;

export const KINESIS_FORMATS = ['JSONEachRow', 'Avro', 'AvroConfluent'] as const;
export const KINESIS_ITERATOR_TYPES = ['TRIM_HORIZON', 'LATEST', 'AT_TIMESTAMP'] as const;
export const KINESIS_AUTHENTICATIONS = ['IAM_ROLE', 'IAM_USER'] as const;

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

export const TABLE_ENGINES = ['MergeTree', 'ReplacingMergeTree', 'SummingMergeTree', 'Null'] as const;

export const SOURCE_KINDS = ['kafka', 'objectStorage', 'kinesis', 'postgres'] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];
