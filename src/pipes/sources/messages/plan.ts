import { mappingsOf, type PipeConfig } from '../../model.js';
import type { BadRecord, InsertPlan } from '../../records/index.js';
import { insertPlan, PermanentError, readSettings } from '../../records/index.js';
import type { SchemaRegistryClient } from './schema-registry.js';
import type { MessageSource } from './source.js';

/** The formats a stream's messages come in: the engine parses each message's bytes. */
const FORMATS = ['JSONEachRow', 'Avro', 'AvroConfluent'] as const;
export type MessageFormat = (typeof FORMATS)[number];

/** How a pipe's messages become rows: the mapped fields and the virtual columns it uses. */
export interface MessagePlan<M> {
  format: MessageFormat;
  source: MessageSource<M>;
  plan: InsertPlan;
  /** The virtual columns the mappings use, in the order they are written. */
  virtual: string[];
  settings: Record<string, string | number | boolean>;
  /** Where AvroConfluent messages' schemas are read. */
  registry?: SchemaRegistryClient;
}

export function messagePlan<M>(
  config: PipeConfig,
  format: string,
  source: MessageSource<M>,
  registry?: SchemaRegistryClient,
): MessagePlan<M> {
  // The create checks refuse other formats; a pipe stored before they did fails, never guesses.
  if (!FORMATS.includes(format as MessageFormat))
    throw new PermanentError(
      'SLUICE_ERR_UNSUPPORTED',
      `format ${format} is not supported yet: use ${FORMATS.join(', ')}`,
    );
  const columns = Object.keys(source.virtualTypes);
  const mappings = mappingsOf(config);
  const virtual = columns.filter((column) => mappings.some((mapping) => mapping.sourceField === column));
  const plan = insertPlan(mappings, config.destination.columns ?? [], {
    positional: false,
    virtualColumns: columns,
    virtualTypes: source.virtualTypes,
  });
  return {
    format: format as MessageFormat,
    source,
    plan,
    virtual,
    settings: readSettings(config.settings),
    ...(registry ? { registry } : {}),
  };
}

/** A message set aside: where it is in its stream, why, and its bytes (base64 when not text). */
export function badRecord<M>(how: MessagePlan<M>, message: M, error: string, binary = false): BadRecord {
  const value = how.source.value(message);
  return {
    source: how.source.position(message),
    row: how.source.row(message),
    error,
    raw: value ? value.toString(binary ? 'base64' : 'utf8') : '',
  };
}
