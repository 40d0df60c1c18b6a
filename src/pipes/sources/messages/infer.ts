import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { literal } from '../../../engine/index.js';
import { type DiscoveredField, DiscoveryProblem, inferredField } from '../discovery.js';
import { EngineError, type Scratch, type SourceReader } from '../ports.js';
import { type AvroFormat, avroFiles, confluentIds } from './avro-file.js';
import { recordsText } from './json-file.js';
import type { MessagePlan } from './plan.js';
import type { Reading } from './reading.js';

/**
 * How the engine infers a schema from records: a column is Nullable only where a value was null
 * (so a field's type is what a column of it holds), every sampled record is read, and what reads
 * as a date or a number is typed so.
 */
const INFERENCE_SETTINGS = {
  schema_inference_make_columns_nullable: 'auto',
  input_format_max_rows_to_read_for_schema_inference: 100_000,
  input_format_max_bytes_to_read_for_schema_inference: 64 * 1024 * 1024,
  max_threads: 1,
};

/** What the engine inferred of a stream's first messages, and those it could not read. */
export interface InferredMessages {
  fields: DiscoveredField[];
  /** The first records as the engine reads them with the inferred types (a preview). */
  records: Record<string, unknown>[];
  /** The messages that could not be read in the format, with why (the first few). */
  refused: string[];
}

/**
 * The fields of a stream's first messages as the engine's own schema inference types them, in
 * the pipe's format: the messages are written to the service's scratch space as the pipe would
 * hand them to the engine (json-file.ts, avro-file.ts) and the source reader describes the file.
 * No JavaScript object is made of a record. Throws EngineError when the engine cannot read them.
 */
export async function inferMessages<M>(
  reading: Reading,
  how: MessagePlan<M>,
  messages: readonly M[],
  /** The source's `format` field, named when no message reads in it. */
  formatPath: string,
): Promise<InferredMessages> {
  let inferred: InferredMessages;
  try {
    inferred =
      how.format === 'JSONEachRow'
        ? await inferJson(reading, how, messages)
        : await inferAvro(reading, how, messages, how.format);
  } catch (error) {
    throw unreadableRecords(error, formatPath, how.format);
  }
  const [first] = inferred.refused;
  if (inferred.fields.length === 0 && first !== undefined) {
    throw new DiscoveryProblem({
      path: formatPath,
      message: `the first records do not read as ${how.format}: ${first}`,
    });
  }
  return inferred;
}

async function inferJson<M>(reading: Reading, how: MessagePlan<M>, messages: readonly M[]) {
  const text = recordsText(how, messages);
  const refused = text.refused.map((r) => `${how.source.describe(messages[r.index] as M)}: ${r.error}`);
  if (text.lines.length === 0) return { fields: [], records: [], refused };
  return withScratch(reading.scratch, 'json', text.chunks, async (path) => {
    const from = `file(${literal(path)}, 'JSONEachRow')`;
    const described = await describe(reading.sourceReader, from);
    const records = await previewRecords(reading.sourceReader, from);
    // A key in fewer records than were read is missing from some: optional, whatever its type.
    const counts = await reading.sourceReader.query(
      `SELECT key, count() AS n FROM (SELECT arrayJoin(JSONExtractKeys(line)) AS key FROM file(${literal(path)}, 'LineAsString', 'line String')) GROUP BY key`,
      { settings: { max_threads: 1 } },
    );
    const present = new Map(counts.rows.map((row) => [String(row.key), Number(row.n)]));
    const fields = described.map((column) =>
      inferredField(column.name, column.type, (present.get(column.name) ?? 0) < text.lines.length),
    );
    return { fields, records, refused };
  });
}

async function inferAvro<M>(
  reading: Reading,
  how: MessagePlan<M>,
  messages: readonly M[],
  format: AvroFormat,
) {
  const answers =
    format === 'AvroConfluent' && how.registry
      ? await how.registry.schemas(confluentIds(messages.map((message) => how.source.value(message))))
      : new Map();
  const files = avroFiles(how, messages, format, answers);
  const refused = files.refused.map((r) => `${how.source.describe(messages[r.index] as M)}: ${r.error}`);
  // Each writer schema is described apart: a field some schemas lack is optional.
  const bySchema: DiscoveredField[][] = [];
  let records: Record<string, unknown>[] = [];
  for (const group of files.groups) {
    const pieces = [group.header, ...group.entries.flatMap((entry) => entry.pieces)];
    const described = await withScratch(reading.scratch, 'avro', pieces, async (path) => {
      const from = `file(${literal(path)}, 'Avro')`;
      // The preview shows records of the first writer schema.
      if (bySchema.length === 0) records = await previewRecords(reading.sourceReader, from);
      return describe(reading.sourceReader, from);
    });
    bySchema.push(described.map((column) => inferredField(column.name, column.type, false)));
  }
  return { fields: mergeSchemas(bySchema), records, refused };
}

/** Fields of several writer schemas, in order of first appearance; one missing from a schema is optional. */
function mergeSchemas(schemas: DiscoveredField[][]): DiscoveredField[] {
  const merged = new Map<string, DiscoveredField>();
  for (const fields of schemas) {
    for (const field of fields) {
      const known = merged.get(field.name);
      merged.set(field.name, known ? { ...known, optional: known.optional || field.optional } : field);
    }
  }
  for (const [name, field] of merged) {
    if (schemas.some((fields) => !fields.some((f) => f.name === name))) field.optional = true;
  }
  return [...merged.values()];
}

/** The engine's DESCRIBE of a table function, its schema inferred from the data. */
export async function describe(
  engine: SourceReader,
  from: string,
  settings: Record<string, string | number | boolean> = {},
): Promise<{ name: string; type: string }[]> {
  const result = await engine.query(`DESCRIBE TABLE ${from}`, {
    settings: { ...INFERENCE_SETTINGS, ...settings },
  });
  return result.rows.map((row) => ({ name: String(row.name), type: String(row.type) }));
}

/** How many records a discovery shows of what it read. */
export const PREVIEW_RECORDS = 10;

/** The first records of a table function, typed as `describe` infers them (a discovery's preview). */
export async function previewRecords(
  engine: SourceReader,
  from: string,
  settings: Record<string, string | number | boolean> = {},
): Promise<Record<string, unknown>[]> {
  const result = await engine.query(`SELECT * FROM ${from} LIMIT ${PREVIEW_RECORDS}`, {
    settings: { ...INFERENCE_SETTINGS, ...settings },
  });
  return result.rows;
}

async function withScratch<T>(
  scratch: Scratch,
  extension: string,
  pieces: Buffer[],
  use: (path: string) => Promise<T>,
): Promise<T> {
  const file = `discovery-${randomUUID()}.${extension}`;
  const path = scratch.path(file);
  try {
    // The scratch space is made when the service's engine first starts, which may not be yet.
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, pieces);
    return await use(path);
  } finally {
    await scratch.remove(file);
  }
}

/** The engine's reason, without its code, the file it read or the stack of operators. */
export function inferenceReason(error: unknown): string {
  const message = error instanceof EngineError || error instanceof Error ? error.message : String(error);
  return message
    .replace(/^Code: \d+\. DB::Exception: /, '')
    .replace(/\s*:?\s*\(in file\/uri[^)]*\)/g, '')
    .replace(/\s*:?\s*While executing[\s\S]*$/, '')
    .replace(/\s*You can specify the structure manually[\s\S]*$/, '')
    .trim();
}

/**
 * Records the engine cannot read in the declared format are the request's fault (a 400 naming
 * `format`, with the engine's reason); anything else (an engine that cannot answer now) is not.
 */
export function unreadableRecords(error: unknown, path: string, format: string): unknown {
  if (!(error instanceof EngineError) || error.code === undefined) return error;
  return new DiscoveryProblem({
    path,
    message: `the first records do not read as ${format}: ${inferenceReason(error)}`,
  });
}
