import type { PipeConfig } from '../../model.js';
import type { BadRecord, InsertPlan } from '../../records/index.js';
import { insertPlan, readSettings } from '../../records/index.js';
import type { KafkaConfig } from './connection.js';
import {
  KAFKA_VIRTUAL_COLUMNS,
  KAFKA_VIRTUAL_TYPES,
  type KafkaVirtualColumn,
  type SourcedMessage,
} from './records-file.js';
import { SchemaRegistryClient } from './schema-registry.js';

/** How a pipe's messages become rows: the mapped fields and the virtual columns it uses. */
export interface MessagePlan {
  format: KafkaConfig['format'];
  plan: InsertPlan;
  virtual: KafkaVirtualColumn[];
  settings: Record<string, string | number | boolean>;
  /** Where AvroConfluent messages' schemas are read. */
  registry?: SchemaRegistryClient;
}

export function messagePlan(config: PipeConfig, allowPrivateSources: boolean): MessagePlan {
  const source = config.source.kafka as KafkaConfig;
  const virtual = KAFKA_VIRTUAL_COLUMNS.filter((column) =>
    config.fieldMappings.some((mapping) => mapping.sourceField === column),
  );
  const plan = insertPlan(config.fieldMappings, config.destination.columns ?? [], {
    positional: false,
    virtualColumns: KAFKA_VIRTUAL_COLUMNS,
    virtualTypes: KAFKA_VIRTUAL_TYPES,
  });
  return {
    format: source.format,
    plan,
    virtual,
    settings: readSettings(config.settings),
    ...(source.schemaRegistry
      ? { registry: new SchemaRegistryClient(source.schemaRegistry, allowPrivateSources) }
      : {}),
  };
}

/** A message set aside: where it is in its topic, why, and its bytes (base64 when not text). */
export function badRecord(sourced: SourcedMessage, error: string, binary = false): BadRecord {
  const { topic, partition, message } = sourced;
  return {
    source: `${topic}:${partition}:${message.offset}`,
    row: Number(message.offset),
    error,
    raw: message.value ? message.value.toString(binary ? 'base64' : 'utf8') : '',
  };
}
