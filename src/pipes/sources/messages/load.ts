import type { Engine } from '../../../engine/index.js';
import type { RangeRead } from '../../records/index.js';
import { avroSampleProblem, loadAvroMessages } from './avro-load.js';
import { jsonSampleProblem, loadJsonMessages } from './json-load.js';
import type { MessagePlan } from './plan.js';

type Engines = { engine: Engine; sourceReader: Engine };

/**
 * Loads a batch of a stream's messages into `into` through the source reader, in the pipe's
 * format; the messages that do not parse or fit come back as bad records, the rest are loaded
 * (and counted).
 */
export function loadMessages<M>(
  engines: Engines,
  how: MessagePlan<M>,
  messages: readonly M[],
  into: string,
  name: string,
): Promise<RangeRead> {
  return how.format === 'JSONEachRow'
    ? loadJsonMessages(engines, how, messages, into, name)
    : loadAvroMessages(engines, how, messages, into, name);
}

/**
 * validateSamples: the first sample that does not parse and map as the pipe will, and why;
 * undefined when all do.
 */
export async function sampleProblem<M>(
  engines: Engines,
  how: MessagePlan<M>,
  samples: readonly M[],
): Promise<{ message: M; reason: string } | undefined> {
  const problem =
    how.format === 'JSONEachRow'
      ? await jsonSampleProblem(engines.sourceReader, how, samples)
      : await avroSampleProblem(engines, how, samples);
  return problem && { message: samples[problem.index] as M, reason: problem.reason };
}
