import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { literal, settingsClause } from '../../../engine/index.js';
import {
  type BadRecord,
  MAX_EXPLAINED,
  type RangeRead,
  type SkippedRow,
  whyRecordFails,
} from '../../records/index.js';
import type { BatchSink, SourceReader } from '../ports.js';
import { recordsText, textChunks } from './json-file.js';
import { badRecord, type MessagePlan } from './plan.js';

/**
 * Loads a batch of JSON messages into the sink through the source reader: the engine parses the
 * bytes (json-file.ts), bad ones go back as bad records with their place in the stream.
 * A line that is not JSON at all can make the engine's parser read on into the next line, so
 * when the engine skipped rows, lines that are not JSON are found (by the engine), set aside and
 * the rest parsed again: every skipped row then is exactly one message.
 */
export async function loadJsonMessages<M>(
  sink: BatchSink,
  sourceReader: SourceReader,
  how: MessagePlan<M>,
  messages: readonly M[],
  name: string,
): Promise<RangeRead> {
  const file = `${name}-${randomUUID()}.json`;
  const path = sink.scratch.path(file);
  let text = recordsText(how, messages);
  const bad = text.refused.map((r) => badRecord(how, messages[r.index] as M, r.error));
  try {
    await writeText(path, text.chunks);
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
        await writeText(path, text.chunks);
        return 'again';
      },
    });
    bad.push(...(await explain(sourceReader, how, messages, text.lines, skipped)));
    return { rows, badRecords: bad };
  } finally {
    await sink.scratch.remove(file);
  }
}

/** Writes a batch's text to its file; its chunks then serve the next text (buffer-pool.ts). */
async function writeText(path: string, chunks: Buffer[]): Promise<void> {
  try {
    await writeFile(path, chunks);
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
