import type { ErrorCode } from '../../../errors.js';
import { avroLong, containerHeader, nestingDepth, plainBlockData, readContainer } from './avro.js';
import type { MessagePlan } from './plan.js';
import type { SchemaAnswer } from './schema-registry.js';
import { avroVirtual, avroVirtualType, type VirtualType } from './source.js';

/** Deeper writer schemas are refused: the engine's Avro reader walks a schema recursively. */
const MAX_SCHEMA_DEPTH = 64;

/** The Confluent wire format: magic byte 0, a 4-byte schema id, then the record's Avro data. */
const CONFLUENT_PREFIX = 5;

export type AvroFormat = 'Avro' | 'AvroConfluent';

/** A message's part of a container file: its blocks (each followed by the file's sync marker). */
export interface AvroEntry {
  index: number;
  pieces: Buffer[];
  /** The record's own data, when the message is one record (AvroConfluent). */
  datum?: Buffer;
}

/** The messages of one schema, and the header of the container file that holds them. */
export interface AvroGroup {
  header: Buffer;
  /** The writer schema, as the registry or the message gave it. */
  schema: string;
  entries: AvroEntry[];
}

/** The schema ids the messages name (AvroConfluent), to ask the registry for. */
export function confluentIds(values: readonly (Buffer | null)[]): number[] {
  const ids = new Set<number>();
  for (const value of values) {
    if (value && value.length >= CONFLUENT_PREFIX && value[0] === 0) ids.add(value.readUInt32BE(1));
  }
  return [...ids];
}

/**
 * The container files the engine parses for a batch of Avro messages, one per schema: each
 * message's record data is copied as it is into blocks of its own (so a broken record cannot make
 * the reader misread the next one), after the virtual columns the mappings use, encoded as
 * fields put in front of the schema's own. A message that cannot be framed is refused with its
 * reason; no record is decoded here.
 */
export function avroFiles<M>(
  how: MessagePlan<M>,
  messages: readonly M[],
  format: AvroFormat,
  answers: ReadonlyMap<number, SchemaAnswer>,
) {
  const columns = how.virtual;
  const groups = new Map<string, AvroGroup & { sync: Buffer }>();
  const refused: { index: number; error: string }[] = [];
  const groupFor = (key: string, schema: string, codec: string) => {
    let group = groups.get(key);
    if (!group) {
      if (nestingDepth(schema) > MAX_SCHEMA_DEPTH) {
        throw new RefusedMessage(`the writer schema nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
      }
      const { header, sync } = containerHeader(withVirtualFields(how, schema), codec);
      group = { header, schema, sync, entries: [] };
      groups.set(key, group);
    }
    return group;
  };
  for (const [index, message] of messages.entries()) {
    try {
      const value = how.source.value(message);
      const framed =
        format === 'AvroConfluent'
          ? confluentRecords(value, answers)
          : containerRecords(value, columns.length > 0);
      const group = groupFor(framed.key, framed.schema, framed.codec);
      const fields = columns.length > 0 ? virtualDatum(how, message) : undefined;
      const pieces = framed.blocks.flatMap((block) =>
        fields
          ? [
              avroLong(block.count),
              avroLong(fields.length + block.data.length),
              fields,
              block.data,
              group.sync,
            ]
          : [avroLong(block.count), avroLong(block.data.length), block.data, group.sync],
      );
      const datum = format === 'AvroConfluent' ? framed.blocks[0]?.data : undefined;
      group.entries.push({ index, pieces, ...(datum ? { datum } : {}) });
    } catch (error) {
      // Whatever a message's bytes or its schema make fail sets that message aside, never the batch.
      refused.push({ index, error: (error as Error).message });
    }
  }
  return { groups: [...groups.values()], refused };
}

class RefusedMessage extends Error {
  readonly code: ErrorCode = 'SLUICE_ERR_BAD_RECORD';
}

interface Framed {
  key: string;
  schema: string;
  codec: string;
  blocks: { count: number; data: Buffer }[];
}

function confluentRecords(value: Buffer | null, answers: ReadonlyMap<number, SchemaAnswer>): Framed {
  if (!value || value.length < CONFLUENT_PREFIX || value[0] !== 0) {
    throw new RefusedMessage(
      'the message is not in the Confluent wire format (magic byte 0, then a schema id)',
    );
  }
  const id = value.readUInt32BE(1);
  const answer = answers.get(id);
  if (!answer) throw new Error(`schema id ${id} was not asked of the registry`);
  if ('refused' in answer) throw new RefusedMessage(answer.refused);
  return {
    key: `id ${id}`,
    schema: answer.schema,
    codec: 'null',
    blocks: [{ count: 1, data: value.subarray(5) }],
  };
}

/**
 * A message that is a whole container file (format Avro). Its blocks are copied as they are;
 * with virtual columns each record needs its fields in front, so a block must then hold one record
 * and be uncompressed (or deflate, which Node inflates).
 */
function containerRecords(value: Buffer | null, withVirtual: boolean): Framed {
  if (!value) throw new RefusedMessage('the message is empty');
  let container: ReturnType<typeof readContainer>;
  try {
    container = readContainer(value);
  } catch (error) {
    throw new RefusedMessage((error as Error).message);
  }
  const { schema, codec } = container;
  if (!withVirtual) return { key: `${codec}\n${schema}`, schema, codec, blocks: container.blocks };
  const blocks = container.blocks.map((block) => {
    if (block.count !== 1) {
      throw new RefusedMessage(
        `a block holds ${block.count} records: with virtual columns mapped, each block of an Avro message must hold one`,
      );
    }
    let data: Buffer | undefined;
    try {
      data = plainBlockData(codec, block.data);
    } catch (error) {
      throw new RefusedMessage((error as Error).message);
    }
    if (!data) throw new RefusedMessage(`codec ${codec}: with virtual columns mapped, use null or deflate`);
    return { count: 1, data };
  });
  return { key: `null\n${schema}`, schema, codec: 'null', blocks };
}

/** The schema with the virtual columns as fields in front of the record's own. */
function withVirtualFields<M>(how: MessagePlan<M>, schema: string): string {
  const columns = how.virtual;
  if (columns.length === 0) return schema;
  let parsed: unknown;
  try {
    parsed = JSON.parse(schema);
  } catch {
    throw new RefusedMessage('the writer schema is not JSON');
  }
  const record = parsed as { type?: unknown; fields?: { name?: unknown }[] };
  if (record?.type !== 'record' || !Array.isArray(record.fields)) {
    throw new RefusedMessage('with virtual columns mapped, the writer schema must be a record');
  }
  const clash = record.fields.find((field) => columns.includes(field?.name as string));
  if (clash) {
    throw new RefusedMessage(
      `the record has a field ${String(clash?.name)}, which is also a mapped virtual column`,
    );
  }
  const virtual = columns.map((name) => ({ name, type: avroVirtualType(typeOf(how, name)) }));
  return JSON.stringify({ ...record, fields: [...virtual, ...record.fields] });
}

function virtualDatum<M>(how: MessagePlan<M>, message: M): Buffer {
  return Buffer.concat(
    how.virtual.map((column) => avroVirtual(typeOf(how, column), how.source.virtualValue(column, message))),
  );
}

function typeOf<M>(how: MessagePlan<M>, column: string): VirtualType {
  const type = how.source.virtualTypes[column];
  if (!type) throw new Error(`no type for the virtual column ${column}`);
  return type;
}
