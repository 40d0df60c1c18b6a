import type { EngineFirst, RangeRead } from '../../records/index.js';
import type { BatchSink, SourceReader } from '../ports.js';
import { avroSampleProblem, loadAvroMessages } from './avro-load.js';
import { jsonSampleProblem, loadJsonMessages } from './json-load.js';
import type { MessagePlan } from './plan.js';
import type { Reading } from './reading.js';

/**
 * Loads a batch of a stream's messages into the sink through the source reader, in the pipe's
 * format; the messages that do not parse or fit come back as bad records, the rest are loaded
 * (and counted).
 */
export async function loadMessages<M>(
  sink: BatchSink,
  sourceReader: SourceReader,
  how: MessagePlan<M>,
  messages: readonly M[],
  name: string,
  engineFirst?: EngineFirst,
): Promise<RangeRead> {
  const read = await (how.format === 'JSONEachRow'
    ? loadJsonMessages(sink, sourceReader, how, messages, name, engineFirst)
    : loadAvroMessages(sink, how, messages, name));
  const oldestAt = oldestOf(how, messages);
  return oldestAt === undefined ? read : { ...read, oldestAt };
}

/** When the oldest of the messages was made at its source, when the source says. */
function oldestOf<M>(how: MessagePlan<M>, messages: readonly M[]): number | undefined {
  let oldest: number | undefined;
  for (const message of messages) {
    const at = how.source.producedAt(message);
    if (at !== undefined && (oldest === undefined || at < oldest)) oldest = at;
  }
  return oldest;
}

/**
 * validateSamples: the first sample that does not parse and map as the pipe will, and why;
 * undefined when all do.
 */
export async function sampleProblem<M>(
  reading: Reading,
  how: MessagePlan<M>,
  samples: readonly M[],
): Promise<{ message: M; reason: string } | undefined> {
  const problem =
    how.format === 'JSONEachRow'
      ? await jsonSampleProblem(reading.sourceReader, how, samples)
      : await avroSampleProblem(reading, how, samples);
  return problem && { message: samples[problem.index] as M, reason: problem.reason };
}
