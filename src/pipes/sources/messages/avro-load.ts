import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { literal } from '../../../engine/index.js';
import { PermanentError, type RangeRead, StageLoadError } from '../../records/index.js';
import { type BatchSink, EngineError, isBadDataEngineError, type Scratch } from '../ports.js';
import { type AvroEntry, type AvroFormat, type AvroGroup, avroFiles, confluentIds } from './avro-file.js';
import { badRecord, type MessagePlan } from './plan.js';
import type { Reading } from './reading.js';
import type { SchemaAnswer } from './schema-registry.js';

/** A writer schema the columns cannot take, as the Avro reader says reading a file's header. */
const HEADER_CODES = new Set([
  44, // ILLEGAL_COLUMN
  53, // TYPE_MISMATCH
  70, // CANNOT_CONVERT_TYPE
]);

/**
 * The engine's Avro reader refused a file's header (its writer schema), not a record in it. The
 * codes are shared with records the columns cannot take, and the engine gives no other field to
 * tell them apart: its message's "while reading header" is the only signal, kept here alone.
 */
function isHeaderRefused(error: unknown): boolean {
  return (
    error instanceof EngineError &&
    HEADER_CODES.has(error.code ?? 0) &&
    /while reading header/i.test(error.message)
  );
}

/**
 * Loads a batch of Avro messages into the sink: one container file per writer schema, parsed by the
 * engine (avro-file.ts). The engine's Avro reader stops at the first record it cannot read, so a
 * file that fails is split in halves until each failing message stands alone and is set aside;
 * the halves that read are loaded. A schema that does not fit the table (the reader says so
 * reading the file's header) sets aside its messages at once.
 */
export async function loadAvroMessages<M>(
  sink: BatchSink,
  how: MessagePlan<M>,
  messages: readonly M[],
  name: string,
): Promise<RangeRead> {
  const files = avroFiles(how, messages, how.format as AvroFormat, await schemaAnswers(how, messages));
  const bad = files.refused.map((r) => badRecord(how, messages[r.index] as M, r.error, true));
  const setAside = (entries: AvroEntry[], error: string) => {
    for (const entry of entries) bad.push(badRecord(how, messages[entry.index] as M, error, true));
  };
  let rows = 0;
  const load = async (group: AvroGroup, entries: AvroEntry[], checked: boolean): Promise<void> => {
    if (entries.length === 0) return;
    const loaded = await loadEntries(sink, how, group, entries, name);
    if (!('reason' in loaded)) {
      rows += loaded.rows;
      return;
    }
    const problem = loaded;
    if (entries.length === 1 || problem.wholeSchema) return setAside(entries, problem.reason);
    if (!checked) {
      // Finding the records that do not decode costs one pass; halving costs a load per half.
      const broken = await undecodable(group, entries);
      for (const [entry, reason] of broken) setAside([entry], reason);
      if (broken.size > 0)
        return load(
          group,
          entries.filter((entry) => !broken.has(entry)),
          true,
        );
    }
    const half = Math.ceil(entries.length / 2);
    await load(group, entries.slice(0, half), true);
    await load(group, entries.slice(half), true);
  };
  for (const group of files.groups) await load(group, group.entries, false);
  return { rows, badRecords: bad };
}

/** validateSamples: why the first sample that does not parse and map as the pipe will fails. */
export async function avroSampleProblem<M>(
  reading: Reading,
  how: MessagePlan<M>,
  samples: readonly M[],
): Promise<{ index: number; reason: string } | undefined> {
  const answers = await schemaAnswers(how, samples);
  for (const index of samples.keys()) {
    const files = avroFiles(how, [samples[index] as M], how.format as AvroFormat, answers);
    const refused = files.refused[0];
    if (refused) return { index, reason: refused.error };
    const group = files.groups[0] as AvroGroup;
    const read = await withContainerFile(reading.scratch, how, group, group.entries, 'sample', (from) =>
      reading.sourceReader.query(`SELECT ${how.plan.selectList} FROM ${from}`, {
        settings: avroSettings(how),
      }),
    );
    if ('reason' in read) return { index, reason: read.reason };
  }
  return undefined;
}

/**
 * The entries whose record data does not decode with the writer schema, and why (read by avsc,
 * only after the engine refused a file). Entries without their own data are left to halving.
 */
async function undecodable(group: AvroGroup, entries: AvroEntry[]): Promise<Map<AvroEntry, string>> {
  const broken = new Map<AvroEntry, string>();
  if (!entries.some((entry) => entry.datum)) return broken;
  // Loaded on first use: only a file the engine refused needs it.
  const { default: avro } = await import('avsc');
  let type: InstanceType<typeof avro.Type>;
  try {
    type = avro.Type.forSchema(JSON.parse(group.schema));
  } catch {
    return broken;
  }
  for (const entry of entries) {
    if (!entry.datum) continue;
    try {
      if (type.decode(entry.datum, 0).offset < 0)
        broken.set(entry, 'the record data ends before the record does');
    } catch (error) {
      broken.set(entry, `the record data does not decode with its schema: ${(error as Error).message}`);
    }
  }
  return broken;
}

async function schemaAnswers<M>(how: MessagePlan<M>, messages: readonly M[]) {
  if (how.format !== 'AvroConfluent') return new Map<number, SchemaAnswer>();
  if (!how.registry) throw new Error('format AvroConfluent without a schema registry');
  return how.registry.schemas(confluentIds(messages.map((message) => how.source.value(message))));
}

async function loadEntries<M>(
  sink: BatchSink,
  how: MessagePlan<M>,
  group: AvroGroup,
  entries: AvroEntry[],
  name: string,
) {
  return withContainerFile(sink.scratch, how, group, entries, name, async (from, file) => {
    const settings = avroSettings(how);
    const loaded = await sink.load({ name: file, from, plan: how.plan, settings });
    // The engine's Avro reader stops at a record it cannot read rather than skip it; a skipped one
    // could not be told apart from its message's other records, so it is never let pass unseen.
    if (loaded.skipped.length > 0)
      throw new PermanentError(
        'SLUICE_ERR_STAGED_COUNT',
        'the engine skipped records of an Avro container file without saying which',
      );
    return { rows: loaded.rows };
  });
}

/**
 * Writes the entries as a container file in the service's scratch directory and runs `use` on
 * it; an error that says the records cannot be read comes back as the reason, any other throws.
 */
async function withContainerFile<M, T>(
  scratch: Scratch,
  how: MessagePlan<M>,
  group: AvroGroup,
  entries: AvroEntry[],
  name: string,
  use: (from: string, file: string) => Promise<T>,
): Promise<{ reason: string; wholeSchema: boolean } | T> {
  const file = `${name}-${randomUUID()}.avro`;
  const path = scratch.path(file);
  try {
    await writeFile(path, [group.header, ...entries.flatMap((entry) => entry.pieces)]);
    return await use(`file(${literal(path)}, 'Avro', ${literal(how.plan.structure)})`, file);
  } catch (error) {
    // Rows may be in the stage already: only the whole batch read again is safe.
    if (error instanceof StageLoadError || error instanceof PermanentError) throw error;
    const wholeSchema = isHeaderRefused(error);
    if (!wholeSchema && !isBadDataEngineError(error)) throw error;
    return { reason: reasonOf(error as Error), wholeSchema };
  } finally {
    await scratch.remove(file);
  }
}

/** A field the schema lacks reads as its column's default, as a JSON message's missing key does. */
function avroSettings<M>(how: MessagePlan<M>) {
  return { ...how.settings, input_format_avro_allow_missing_fields: 1 };
}

function reasonOf(error: Error): string {
  return error.message
    .replace(/^Code: \d+\. DB::Exception: /, '')
    .replace(/\s*:\s*\(in file\/uri[\s\S]*$/, '')
    .replace(/\s*:?\s*While executing[\s\S]*$/, '')
    .trim();
}
