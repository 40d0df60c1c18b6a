import { randomUUID } from 'node:crypto';
import { literal, settingsClause } from '../../../engine/index.js';
import {
  type BadRecord,
  type EngineFirst,
  MAX_EXPLAINED,
  PARSE_SETTINGS,
  type RangeRead,
  type SkippedRow,
  whyRecordFails,
  writeWhole,
} from '../../records/index.js';
import type { BatchSink, SourceReader } from '../ports.js';
import { recordsText, textChunks } from './json-file.js';
import { badRecord, type MessagePlan } from './plan.js';

/**
 * Settings of the engine's own load of a batch's text, on top of the pipe's: a field a message
 * leaves out, or gives as null for a column that is not Nullable, is the type's default, as the
 * source reader's typed read makes it, not the table's DEFAULT expression.
 */
const ENGINE_TEXT_SETTINGS = { input_format_defaults_for_omitted_fields: 0 };

/**
 * Loads a batch of JSON messages into the sink: the engine parses the bytes (json-file.ts), bad
 * ones go back as bad records with their place in the stream. When every mapped field is its
 * column (InsertPlan.textIsTarget) and the batch goes into a stage, the service's engine loads
 * the text itself (one parse, no source reader, no Native stream between them: about a third
 * less of the engines' CPU, README "Benchmarks"); when it refuses it (a message it cannot take),
 * the batch goes through the source reader, which sets such messages aside. A line that is not
 * JSON at all can make the engine's parser read on into the next line, so when the source reader
 * skipped rows, lines that are not JSON are found (by the engine), set aside and the rest parsed
 * again: every skipped row then is exactly one message.
 */
export async function loadJsonMessages<M>(
  sink: BatchSink,
  sourceReader: SourceReader,
  how: MessagePlan<M>,
  messages: readonly M[],
  name: string,
  engineFirst?: EngineFirst,
): Promise<RangeRead> {
  const file = `${name}-${randomUUID()}.json`;
  // The text file of an earlier batch, written over (records/scratch-text.ts), kept again once done.
  const reused = await sink.scratch.reuse(file);
  let read: RangeRead;
  try {
    read = await loadText(sink, sourceReader, how, messages, { name, file, reused }, engineFirst);
  } catch (error) {
    await sink.scratch.remove(file);
    throw error;
  }
  await sink.scratch.keep(file);
  return read;
}

async function loadText<M>(
  sink: BatchSink,
  sourceReader: SourceReader,
  how: MessagePlan<M>,
  messages: readonly M[],
  { name, file, reused }: { name: string; file: string; reused: boolean },
  engineFirst: EngineFirst | undefined,
): Promise<RangeRead> {
  const path = sink.scratch.path(file);
  let text = recordsText(how, messages);
  const bad = text.refused.map((r) => badRecord(how, messages[r.index] as M, r.error));
  await writeText(path, text.chunks, reused);
  if (engineFirst && how.plan.textIsTarget && engineFirst.take()) {
    const { refused } = await sink.loadText({
      columnList: how.plan.columnList,
      file,
      format: 'JSONEachRow',
      // Under the pipe's own settings, on two cores, the text is parsed on one thread (a replica's
      // batches in flight and the table's merges keep the cores busy; bench/kafka.ts, 2,000 MB
      // backlog, three alternating pairs: steady 301-324 MB/s against 246-317).
      settings: { ...PARSE_SETTINGS, ...how.settings, ...ENGINE_TEXT_SETTINGS },
      rows: text.lines.length,
    });
    if (!refused) return { rows: text.lines.length, badRecords: bad };
    engineFirst.refused(refused, name);
  }
  const { rows, skipped } = await sink.load({
    name: file,
    from: `file(${literal(path)}, 'JSONEachRow', ${literal(how.plan.structure)})`,
    plan: how.plan,
    settings: how.settings,
    recheck: async () => {
      const invalid = await notJsonLines(sourceReader, path);
      if (invalid.size === 0) return 'load';
      const notJson = text.lines.filter((_, line) => invalid.has(line + 1));
      for (const index of notJson) {
        bad.push(badRecord(how, messages[index] as M, 'the message is not valid JSON'));
      }
      text = recordsText(
        how,
        messages,
        text.lines.filter((_, line) => !invalid.has(line + 1)),
      );
      await writeText(path, text.chunks, false);
      return 'again';
    },
  });
  bad.push(...(await explain(sourceReader, how, messages, text.lines, skipped)));
  return { rows, badRecords: bad };
}

/** Writes a batch's text to its file; its chunks then serve the next text (buffer-pool.ts). */
async function writeText(path: string, chunks: Buffer[], reused: boolean): Promise<void> {
  try {
    await writeWhole(path, chunks, reused);
  } finally {
    textChunks.give(chunks);
  }
}

/** Line numbers (from 1) of the lines that are not JSON, as the engine's own JSON reader says. */
async function notJsonLines(engine: SourceReader, path: string): Promise<Set<number>> {
  const result = await engine.query(
    `SELECT n FROM (SELECT rowNumberInAllBlocks() + 1 AS n, isValidJSON(line) AS ok FROM file(${literal(path)}, 'LineAsString', 'line String')) WHERE NOT ok`,
    { settings: { max_threads: 1 } },
  );
  return new Set(result.rows.map((row) => Number(row.n)));
}

async function explain<M>(
  engine: SourceReader,
  how: MessagePlan<M>,
  messages: readonly M[],
  lines: number[],
  skipped: SkippedRow[],
): Promise<BadRecord[]> {
  const records: BadRecord[] = [];
  for (const [count, skip] of skipped.entries()) {
    const index = lines[skip.row - 1];
    if (index === undefined) continue;
    const message = messages[index] as M;
    let error = skip.error.replace(/<LINE FEED>/g, '\\n').trim();
    if (!error && count < MAX_EXPLAINED) {
      const line = Buffer.concat(recordsText(how, messages, [index]).chunks).toString('utf8');
      error = await whyRecordFails(
        engine,
        `SELECT * FROM format(JSONEachRow, ${literal(how.plan.structure)}, ${literal(line)})${settingsClause(how.settings)}`,
      );
    }
    records.push(badRecord(how, message, error || 'the message does not parse'));
  }
  return records;
}

/** validateSamples: why the first sample that does not parse and map as the pipe will fails. */
export async function jsonSampleProblem<M>(
  engine: SourceReader,
  how: MessagePlan<M>,
  samples: readonly M[],
): Promise<{ index: number; reason: string } | undefined> {
  for (const index of samples.keys()) {
    const text = recordsText(how, samples, [index]);
    const refused = text.refused[0];
    if (refused) return { index, reason: refused.error };
    const line = Buffer.concat(text.chunks).toString('utf8');
    try {
      await engine.query(
        `SELECT ${how.plan.selectList} FROM format(JSONEachRow, ${literal(how.plan.structure)}, ${literal(line)})${settingsClause(how.settings)}`,
      );
    } catch (error) {
      return { index, reason: (error as Error).message.replace(/\s*:\s*While executing[\s\S]*$/, '') };
    }
  }
  return undefined;
}
