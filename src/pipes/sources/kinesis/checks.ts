import { codeOf, type Problem } from '../../../errors.js';
import type { PipeConfig } from '../../model.js';
import type { CheckContext } from '../contract.js';
import { messagePlan, sampleProblem } from '../messages/index.js';
import { awsErrorName, connectKinesis, type KinesisConnection, type KinesisSource } from './client.js';
import { streamArn } from './fan-out.js';
import { type KinesisMessage, kinesisMessage, kinesisMessages } from './records.js';
import { listShards } from './shards.js';

const PATH = 'source.kinesis';
const SAMPLE_RECORDS = 10;
const CHECK_TIMEOUT_MS = 15_000;

/** What Sluice cannot do with a Kinesis source yet, before anything is asked of the stream. */
export function unsupportedKinesis(source: KinesisSource): Problem | undefined {
  if (source.format === 'AvroConfluent')
    return {
      path: `${PATH}.format`,
      message:
        'AvroConfluent is not supported yet for Kinesis (a Kinesis source names no schema registry): use Avro (one container per record) or JSONEachRow',
    };
  return undefined;
}

/**
 * The stream exists and can be read with the given credentials (its shards listed and one
 * iterator taken), enhanced fan-out only where it can work, and with validateSamples the first
 * records parse as the pipe maps them (README, "Pipes": failures are 400s naming the field).
 */
export async function kinesisProblems(config: PipeConfig, context: CheckContext): Promise<Problem[]> {
  const source = config.source.kinesis as KinesisSource | undefined;
  if (!source) return [];
  const unsupported = unsupportedKinesis(source);
  if (unsupported) return [unsupported];
  let connection: KinesisConnection;
  try {
    connection = await connectKinesis(source, context.organizationId);
  } catch (error) {
    return [{ path: `${PATH}.iamRole`, message: (error as Error).message }];
  }
  const signal = AbortSignal.timeout(CHECK_TIMEOUT_MS);
  try {
    const { client, sdk } = connection;
    let firstShard: string | undefined;
    try {
      await client.send(new sdk.DescribeStreamSummaryCommand({ StreamName: source.streamName }), {
        abortSignal: signal,
      });
      firstShard = (await listShards(connection, source.streamName))[0]?.id;
      if (firstShard)
        await client.send(
          new sdk.GetShardIteratorCommand({
            StreamName: source.streamName,
            ShardId: firstShard,
            ShardIteratorType: 'TRIM_HORIZON',
          }),
          { abortSignal: signal },
        );
    } catch (error) {
      return [streamProblem(source, error)];
    }
    if (source.useEnhancedFanOut) {
      const fanOut = await fanOutProblem(connection, source, signal);
      if (fanOut) return [fanOut];
    }
    if (!context.validateSamples || !firstShard) return [];
    return await samplesProblems(config, source, connection, context);
  } finally {
    connection.close();
  }
}

function streamProblem(source: KinesisSource, error: unknown): Problem {
  const name = awsErrorName(error);
  const reason = `${name}: ${(error as Error)?.message ?? ''}`.trim();
  if (name === 'ResourceNotFoundException')
    return {
      path: `${PATH}.streamName`,
      message: `no stream ${source.streamName} in ${source.region} for these credentials`,
    };
  if (
    /UnrecognizedClient|InvalidSignature|AccessDenied|NotAuthorized|ExpiredToken|SignatureDoesNotMatch/.test(
      name,
    )
  )
    return {
      path: source.authentication === 'IAM_ROLE' ? `${PATH}.iamRole` : `${PATH}.accessKey`,
      message: `Kinesis refused the credentials (${name}): check the key and its permission to read ${source.streamName}`,
    };
  if (codeOf(error) === 'SLUICE_ERR_SOURCE_ROLE_REFUSED')
    return { path: `${PATH}.iamRole`, message: (error as Error).message };
  return {
    path: `${PATH}.region`,
    message: `cannot read the stream ${source.streamName} in ${source.region}: ${reason}`,
  };
}

/**
 * Enhanced fan-out needs RegisterStreamConsumer and SubscribeToShard. A server without them
 * (kinesalite, most compatible servers) is told apart by asking for the stream's consumers: there
 * the request is refused, never silently read with GetRecords instead.
 */
async function fanOutProblem(
  connection: KinesisConnection,
  source: KinesisSource,
  signal: AbortSignal,
): Promise<Problem | undefined> {
  const { client, sdk } = connection;
  try {
    const StreamARN = await streamArn(connection, source.streamName, signal);
    await client.send(new sdk.ListStreamConsumersCommand({ StreamARN }), { abortSignal: signal });
    return undefined;
  } catch (error) {
    return {
      path: `${PATH}.useEnhancedFanOut`,
      message: `this Kinesis server does not support enhanced fan-out (${awsErrorName(error)}): leave useEnhancedFanOut out`,
    };
  }
}

/** validateSamples: the first records of the first shards parse and map as the pipe will. */
async function samplesProblems(
  config: PipeConfig,
  source: KinesisSource,
  connection: KinesisConnection,
  context: CheckContext,
): Promise<Problem[]> {
  const samples = await firstRecords(connection, source);
  if (samples.length === 0) return [];
  const how = messagePlan(config, source.format, kinesisMessages);
  const reading = { sourceReader: context.sourceReader, scratch: context.scratch };
  const problem = await sampleProblem(reading, how, samples);
  if (!problem) return [];
  return [
    {
      path: 'source.validateSamples',
      message: `${kinesisMessages.describe(problem.message)}: ${problem.reason}`,
    },
  ];
}

/** The records at the start of the stream's shards (TRIM_HORIZON), up to `limit` (schema discovery reads them too). */
export async function firstRecords(
  connection: KinesisConnection,
  source: KinesisSource,
  limit = SAMPLE_RECORDS,
): Promise<KinesisMessage[]> {
  const { client, sdk } = connection;
  const samples: KinesisMessage[] = [];
  for (const shard of await listShards(connection, source.streamName)) {
    if (samples.length >= limit) break;
    const { ShardIterator } = await client.send(
      new sdk.GetShardIteratorCommand({
        StreamName: source.streamName,
        ShardId: shard.id,
        ShardIteratorType: 'TRIM_HORIZON',
      }),
    );
    if (!ShardIterator) continue;
    const page = await client.send(
      new sdk.GetRecordsCommand({ ShardIterator, Limit: limit - samples.length }),
    );
    for (const record of page.Records ?? [])
      samples.push(kinesisMessage(record, source.streamName, shard.id));
  }
  return samples;
}
