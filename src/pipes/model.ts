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

/** Postgres settings defaults seen on the hosted service (reference/pipes.md, "Defaults seen"). */
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
 * A validated create body with the defaults of reference/pipes.md filled in, so the record tells a
 * client what the pipe will actually do: destination database `default`, managed table, mappings by
 * equal names, consumer group `pipes-<id>`, postgres settings, one replica.
 */
export function configFromCreate(body: CreatePipeBody, pipeId: string): PipeConfig {
  const { validateSamples: _requestOnly, ...source } = structuredClone(body.source);
  const destination = structuredClone(body.destination);
  destination.database ??= 'default';
  let fieldMappings = structuredClone(body.fieldMappings);
  if (source.kafka) {
    source.kafka.type ??= 'kafka';
    source.kafka.consumerGroup ??= `pipes-${pipeId}`;
  }
  if (typeof source.kinesis?.timestamp === 'string') {
    source.kinesis.timestamp = unixSeconds(source.kinesis.timestamp);
  }
  if (source.postgres) {
    source.postgres.type ??= 'postgres';
    source.postgres.settings = { ...POSTGRES_SETTINGS_DEFAULTS, ...source.postgres.settings };
    for (const mapping of source.postgres.tableMappings) mapping.sourceSchemaName ??= 'public';
    fieldMappings ??= [];
  } else {
    destination.managedTable ??= true;
    // No mappings (absent, or [] as clients send for "not set"): each column from its own name.
    if (!fieldMappings?.length)
      fieldMappings = (destination.columns ?? []).map((column) => ({
        sourceField: column.name,
        destinationField: column.name,
      }));
  }
  return {
    source,
    destination,
    fieldMappings,
    scaling: structuredClone(body.scaling) ?? { replicas: 1 },
    settings: structuredClone(body.settings) ?? {},
  };
}

/**
 * The record every endpoint returns. Built from the stored public configuration, which holds no
 * secrets; `roles` is request-only and dropped here (spec, "Pipe: response envelope and result").
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

/** `YYYY-MM-DDThh:mm[:ss][Z]`, read as UTC, in UNIX seconds (what the pipe record stores). */
function unixSeconds(text: string): number {
  return Math.floor(Date.parse(text.endsWith('Z') ? text : `${text}Z`) / 1000);
}
