import type { RangeRead } from '../../records/index.js';
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
export function loadMessages<M>(
  sink: BatchSink,
  sourceReader: SourceReader,
  how: MessagePlan<M>,
  messages: readonly M[],
  name: string,
): Promise<RangeRead> {
  return how.format === 'JSONEachRow'
    ? loadJsonMessages(sink, sourceReader, how, messages, name)
    : loadAvroMessages(sink, how, messages, name);
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
