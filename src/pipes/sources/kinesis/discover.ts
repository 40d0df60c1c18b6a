import {
  type DiscoveryContext,
  DiscoveryProblem,
  type DiscoverySource,
  discoveryConfig,
  type SchemaDiscovery,
  throwIfProblems,
} from '../discovery.js';
import { inferMessages, messagePlan } from '../messages/index.js';
import { firstRecords, kinesisProblems } from './checks.js';
import { connectKinesis, type KinesisSource } from './client.js';
import { KINESIS_VIRTUAL_COLUMNS, kinesisMessages } from './records.js';

const PATH = 'source.kinesis';
/** The first records of the stream's shards read to infer the fields. */
const SAMPLE_RECORDS = 100;

/**
 * The fields of a Kinesis stream's first records, typed by the engine (messages/infer.ts): the
 * stream and credentials are checked as at create (checks.ts), then the records at the start of
 * the shards are read (TRIM_HORIZON), nothing registered or kept.
 */
export async function discoverKinesis(
  source: DiscoverySource,
  context: DiscoveryContext,
): Promise<SchemaDiscovery> {
  const config = discoveryConfig(source);
  throwIfProblems(await kinesisProblems(config, { ...context, validateSamples: false }));
  const kinesis = source.kinesis as KinesisSource;
  const connection = await connectKinesis(kinesis, context.organizationId);
  try {
    const samples = await firstRecords(connection, kinesis, SAMPLE_RECORDS);
    if (samples.length === 0) {
      throw new DiscoveryProblem({
        path: `${PATH}.streamName`,
        message: `${kinesis.streamName} holds no records yet: put some first, or write destination.columns by hand`,
      });
    }
    const how = messagePlan(config, kinesis.format, kinesisMessages);
    const reading = { sourceReader: context.sourceReader, scratch: context.scratch };
    const inferred = await inferMessages(reading, how, samples, `${PATH}.format`);
    return {
      fields: inferred.fields,
      records: inferred.records,
      meta: {
        format: kinesis.format,
        sampledRecords: String(samples.length),
        ...(inferred.refused.length > 0 ? { unreadable: inferred.refused.slice(0, 5).join('; ') } : {}),
        virtualColumns: KINESIS_VIRTUAL_COLUMNS.join(', '),
      },
    };
  } finally {
    connection.close();
  }
}
