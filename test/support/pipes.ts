import { type RunningAzurite, startAzurite } from './azurite.js';
import { sql } from './runtime.js';
import type { TestSluice } from './sluice.js';

/** Valid create bodies, one per source kind, each with secrets and request-only fields to strip. */
export function objectStoragePipe(overrides: Record<string, unknown> = {}) {
  return {
    name: 'events from s3',
    source: {
      validateSamples: false,
      objectStorage: {
        type: 's3',
        format: 'JSONEachRow',
        url: 'file:///events/**/*.json.gz',
        compression: 'gzip',
        isContinuous: true,
        authentication: 'IAM_USER',
        accessKey: { accessKeyId: 'AKIAEXAMPLEKEYID', secretKey: 'S3-SECRET-never-returned' },
      },
    },
    destination: {
      database: 'analytics',
      table: 'events',
      managedTable: true,
      tableDefinition: {
        engine: { type: 'ReplacingMergeTree', versionColumnId: 'version' },
        sortingKey: ['id'],
        partitionBy: 'toYYYYMM(ts)',
        primaryKey: 'id',
      },
      columns: [
        { name: 'id', type: 'UInt64' },
        { name: 'ts', type: 'DateTime64(3)' },
        { name: 'version', type: 'UInt64' },
        { name: 'payload', type: 'String' },
      ],
      roles: ['analyst'],
    },
    fieldMappings: [
      { sourceField: 'id', destinationField: 'id' },
      { sourceField: 'timestamp', destinationField: 'ts' },
      { sourceField: 'version', destinationField: 'version' },
      { sourceField: 'data', destinationField: 'payload' },
    ],
    scaling: { replicas: 2, concurrency: 4, replicaCpuMillicores: 500, replicaMemoryGb: 1.5 },
    settings: {
      object_storage_polling_interval_ms: 5000,
      object_storage_max_file_count: 100,
      engine_max_threads: 4,
    },
    ...overrides,
  };
}

/**
 * An Azure pipe; with the runtime on, create lists the container, so tests that expect a 200 pass
 * the connection string of the azurite they started (test/support/azurite.ts).
 */
export function azurePipe(
  connectionString = 'DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=AZURE-SECRET-never-returned',
) {
  return {
    name: 'azure blobs',
    source: {
      objectStorage: {
        type: 'azureblobstorage',
        format: 'CSVWithNames',
        delimiter: ';',
        path: 'logs/*.csv',
        azureContainerName: 'container',
        authentication: 'CONNECTION_STRING',
        connectionString,
      },
    },
    destination: {
      table: 'logs',
      tableDefinition: { engine: { type: 'MergeTree' } },
      columns: [{ name: 'line', type: 'String' }],
    },
    fieldMappings: [{ sourceField: 'line', destinationField: 'line' }],
  };
}

export function kafkaPipe() {
  return {
    name: 'orders from kafka',
    source: {
      validateSamples: true,
      kafka: {
        type: 'confluent',
        format: 'AvroConfluent',
        brokers: 'broker-1:9092,broker-2:9092',
        topics: 'orders',
        consumerGroup: 'orders-to-analytics',
        authentication: 'SCRAM-SHA-512',
        offset: { strategy: 'from_timestamp', timestamp: '2026-01-01T00:00' },
        schemaRegistry: {
          url: 'https://registry.example.com',
          authentication: 'PLAIN',
          credentials: { username: 'registry-user', password: 'REGISTRY-SECRET-never-returned' },
        },
        caCertificate: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----',
        reversePrivateEndpointIds: ['rpe-1'],
        credentials: { username: 'kafka-user', password: 'KAFKA-SECRET-never-returned' },
        exactlyOnce: true,
      },
    },
    destination: {
      table: 'orders',
      managedTable: true,
      tableDefinition: {
        engine: { type: 'SummingMergeTree', columnIds: ['amount'] },
        sortingKey: ['customer'],
      },
      columns: [
        { name: 'customer', type: 'String' },
        { name: 'amount', type: 'Float64' },
        { name: '_offset', type: 'Int64' },
      ],
      roles: ['writer'],
    },
    fieldMappings: [
      { sourceField: 'customer', destinationField: 'customer' },
      { sourceField: 'amount', destinationField: 'amount' },
      { sourceField: '_offset', destinationField: '_offset' },
    ],
    scaling: { replicas: 1 },
    settings: { streaming_max_insert_wait_ms: 1000 },
  };
}

export function kinesisPipe() {
  return {
    name: 'clicks from kinesis',
    source: {
      kinesis: {
        streamName: 'clicks',
        region: 'eu-west-1',
        format: 'JSONEachRow',
        iteratorType: 'AT_TIMESTAMP',
        timestamp: 1767225600,
        useEnhancedFanOut: false,
        authentication: 'IAM_USER',
        accessKey: { accessKeyId: 'AKIAKINESIS', secretKey: 'KINESIS-SECRET-never-returned' },
      },
    },
    destination: {
      table: 'clicks',
      managedTable: false,
      columns: [{ name: 'url', type: 'String' }],
    },
    fieldMappings: [{ sourceField: 'url', destinationField: 'url' }],
  };
}

export function postgresPipe() {
  return {
    name: 'app database',
    source: {
      postgres: {
        type: 'supabase',
        host: 'db.example.com',
        port: 5432,
        database: 'app',
        authentication: 'basic',
        tlsHost: 'db.example.com',
        skipCertVerification: false,
        settings: {
          syncIntervalSeconds: 10,
          pullBatchSize: 5000,
          publicationName: 'sluice_pub',
          allowNullableColumns: true,
          initialLoadParallelism: 2,
          snapshotNumRowsPerPartition: 50000,
          snapshotNumberOfParallelTables: 2,
          enableFailoverSlots: false,
          replicationMode: 'cdc',
          deleteOnMerge: true,
        },
        tableMappings: [
          {
            sourceSchemaName: 'public',
            sourceTable: 'users',
            targetTable: 'app_users',
            excludedColumns: ['password_hash'],
          },
          {
            sourceSchemaName: 'billing',
            sourceTable: 'invoices',
            targetTable: 'invoices',
            useCustomSortingKey: true,
            sortingKeys: ['customer_id', 'id'],
            tableEngine: 'ReplacingMergeTree',
            partitionKey: 'id',
            partitionByExpr: 'toYYYYMM(created_at)',
          },
        ],
        credentials: { username: 'replicator', password: 'POSTGRES-SECRET-never-returned' },
      },
    },
    destination: { database: 'app_mirror', roles: ['reader'] },
  };
}

export const ALL_SECRETS = [
  'S3-SECRET-never-returned',
  'AZURE-SECRET-never-returned',
  'REGISTRY-SECRET-never-returned',
  'KAFKA-SECRET-never-returned',
  'KINESIS-SECRET-never-returned',
  'POSTGRES-SECRET-never-returned',
];

/**
 * What the sample bodies above read from when create checks run (the runtime is on): an Azure
 * (azurite) whose container holds the azure pipe's file, and the unmanaged kinesis table `clicks`.
 * Pass the returned connection string to azurePipe; stop the azurite after the test.
 */
export async function sourcesForSampleBodies(s: TestSluice): Promise<RunningAzurite> {
  const azurite = await startAzurite(['container']);
  await azurite.put('container', 'logs/a.csv', 'line\nx\n');
  await sql(s, 'CREATE TABLE default.clicks (url String) ENGINE = MergeTree ORDER BY url');
  return azurite;
}
