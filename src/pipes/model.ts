import { type PipeRow, perRow } from '../store/index.js';
import { copyJson } from './json-copy.js';
import type {
  CreatePipeBody,
  DestinationConfig,
  FieldMappingConfig,
  PipeRecord,
  ScalingConfig,
  SettingsConfig,
  SourceConfig,
} from './schema/index.js';
import type { AnySourceKind } from './sources/index.js';

/** What is stored of a pipe besides its name and state: the configuration, secrets included. */
export interface PipeConfig {
  source: Omit<SourceConfig, 'validateSamples'>;
  destination: DestinationConfig;
  fieldMappings: FieldMappingConfig[];
  scaling: Partial<ScalingConfig>;
  settings: Partial<SettingsConfig>;
}

/** The kind a configuration's source is of: its one key besides the request-only `validateSamples`. */
export function sourceKindOf(source: Partial<SourceConfig>): string {
  const kind = Object.keys(source).find(
    (key) => key !== 'validateSamples' && (source as Record<string, unknown>)[key] !== undefined,
  );
  if (!kind) throw new Error('pipe has no source kind');
  return kind;
}

/**
 * A validated create body with the defaults of the hosted service filled in (README, "Pipes"), so the record tells a
 * client what the pipe will actually do: destination database `default`, a managed table, one
 * replica, and the kind's own (kind.ts `applyDefaults`). Field mappings stay as sent (mappingsOf).
 */
export function configFromCreate(body: CreatePipeBody, pipeId: string, kind: AnySourceKind): PipeConfig {
  const { validateSamples: _requestOnly, ...source } = copyJson(body.source);
  const destination = copyJson(body.destination);
  destination.database ??= 'default';
  kind.applyDefaults((source as Record<string, unknown>)[kind.name], pipeId);
  if (!kind.writesTablesItNames) destination.managedTable ??= true;
  return {
    source,
    destination,
    // As sent: a client compares what it reads back with what it sent (mappingsOf reads them).
    fieldMappings: copyJson(body.fieldMappings) ?? [],
    scaling: copyJson(body.scaling) ?? { replicas: 1 },
    settings: copyJson(body.settings) ?? {},
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
 * each destination column from the field of its own name. A kind that writes the tables it names
 * maps by table instead: its destination has no columns, so this is empty (rules.ts).
 */
export function mappingsOf(config: Pick<PipeConfig, 'destination' | 'fieldMappings'>) {
  if (config.fieldMappings.length > 0) return config.fieldMappings;
  return (config.destination.columns ?? []).map((column) => ({
    sourceField: column.name,
    destinationField: column.name,
  }));
}

/**
 * The record every endpoint returns. Built from the stored public configuration, which holds no
 * secrets; `roles` is request-only and dropped here (README, "Pipes"). Built once per row
 * (`perRow`): a GET of a cached pipe reuses its record, and its JSON (src/http/record-json.ts).
 */
export const toRecord: (row: PipeRow) => PipeRecord = perRow(buildRecord);

function buildRecord(row: PipeRow): PipeRecord {
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
