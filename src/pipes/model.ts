import type { PipeRow } from '../store/index.js';
import type { SourceKind } from './schema/enums.js';
import { SOURCE_KINDS } from './schema/enums.js';
import type {
  CreatePipeBody,
  DestinationConfig,
  FieldMappingConfig,
  PipeRecord,
  ScalingConfig,
  SettingsConfig,
  SourceConfig,
} from './schema/index.js';

/** What is stored of a pipe besides its name and state: the configuration, secrets included. */
export interface PipeConfig {
  source: Omit<SourceConfig, 'validateSamples'>;
  destination: DestinationConfig;
  fieldMappings: FieldMappingConfig[];
  scaling: Partial<ScalingConfig>;
  settings: Partial<SettingsConfig>;
}

/** Postgres settings defaults seen on the hosted service (README, "Pipes": the defaults filled in). */
const POSTGRES_SETTINGS_DEFAULTS = {
  syncIntervalSeconds: 60,
  pullBatchSize: 100000,
  snapshotNumRowsPerPartition: 100000,
  initialLoadParallelism: 4,
  snapshotNumberOfParallelTables: 1,
  replicationMode: 'cdc',
} as const;

export function sourceKindOf(source: Partial<SourceConfig>): SourceKind {
  const kind = SOURCE_KINDS.find((k) => source[k] !== undefined);
  if (!kind) throw new Error('pipe has no source kind');
  return kind;
}

/**
 * A validated create body with the defaults of the hosted service filled in (README, "Pipes"), so the record tells a
 * client what the pipe will actually do: destination database `default`, managed table, consumer
 * group `pipes-<id>`, postgres settings, one replica. Field mappings stay as sent (mappingsOf).
 */
export function configFromCreate(body: CreatePipeBody, pipeId: string): PipeConfig {
  const { validateSamples: _requestOnly, ...source } = structuredClone(body.source);
  const destination = structuredClone(body.destination);
  destination.database ??= 'default';
  if (source.kafka) {
    source.kafka.type ??= 'kafka';
    source.kafka.consumerGroup ??= `pipes-${pipeId}`;
  }
  if (source.postgres) {
    source.postgres.type ??= 'postgres';
    source.postgres.settings = { ...POSTGRES_SETTINGS_DEFAULTS, ...source.postgres.settings };
    for (const mapping of source.postgres.tableMappings) mapping.sourceSchemaName ??= 'public';
  } else {
    destination.managedTable ??= true;
  }
  return {
    source,
    destination,
    // As sent: a client compares what it reads back with what it sent (mappingsOf reads them).
    fieldMappings: structuredClone(body.fieldMappings) ?? [],
    scaling: structuredClone(body.scaling) ?? { replicas: 1 },
    settings: structuredClone(body.settings) ?? {},
  };
}

/**
 * Whether two configurations name the same source the same way. Compared as JSON with sorted keys:
 * the store keeps JSONB, which orders keys its own way and drops undefined fields.
 */
export function sameSource(a: Pick<PipeConfig, 'source'>, b: Pick<PipeConfig, 'source'>): boolean {
  return canonicalJson(a.source) === canonicalJson(b.source);
}

function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, field: unknown) =>
    field && typeof field === 'object' && !Array.isArray(field)
      ? Object.fromEntries(Object.entries(field).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)))
      : field,
  );
}

/**
 * The mappings a pipe reads with: those sent, else (absent, or `[]` as clients send for "not set")
 * each destination column from the field of its own name. A PostgreSQL pipe maps by table instead.
 */
export function mappingsOf(config: Pick<PipeConfig, 'source' | 'destination' | 'fieldMappings'>) {
  if (config.fieldMappings.length > 0 || config.source.postgres) return config.fieldMappings;
  return (config.destination.columns ?? []).map((column) => ({
    sourceField: column.name,
    destinationField: column.name,
  }));
}

/**
 * The record every endpoint returns. Built from the stored public configuration, which holds no
 * secrets; `roles` is request-only and dropped here (README, "Pipes").
 */
export function toRecord(row: PipeRow): PipeRecord {
  const config = row.config as unknown as PipeConfig;
  const { roles: _requestOnly, ...destination } = config.destination;
  return {
    id: row.id,
    serviceId: row.serviceId,
    name: row.name,
    state: row.state,
    scaling: config.scaling,
    source: config.source as PipeRecord['source'],
    destination,
    fieldMappings: config.fieldMappings,
    settings: config.settings,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/**
 * A Kinesis `timestamp` as the instant it names: UNIX seconds, or `YYYY-MM-DDThh:mm[:ss][Z]` read
 * as UTC. The record keeps the form the client sent (Terraform decodes it into a string).
 */
export function instantOf(timestamp: number | string): Date {
  if (typeof timestamp === 'number') return new Date(timestamp * 1000);
  return new Date(Date.parse(timestamp.endsWith('Z') ? timestamp : `${timestamp}Z`));
}
