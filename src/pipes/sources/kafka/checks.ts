import type { Problem } from '../../../errors.js';
import { privateHostProblem } from '../../../net/index.js';
import type { PipeConfig } from '../../model.js';
import type { CheckContext } from '../contract.js';
import { type MessagePlan, RegistryError, sampleProblem } from '../messages/index.js';
import { connectionOptions, parseBrokers, topicNames, unsupportedKafka } from './connection.js';
import { codesOf, messagesOf, messageWithCode, saslStateRefused, tlsFailureOf } from './errors.js';
import { fetchOnce } from './fetch.js';
import type { KafkaConsumer } from './member.js';
import { kafkaMessagePlan, kafkaMessages } from './messages.js';
import { ROLE_REFUSED } from './msk-iam.js';
import { RawFetchConsumer } from './raw-fetch.js';
import type { KafkaRecord } from './record-batches.js';
import { EARLIEST, requireTopics } from './start.js';

const CHECK_TIMEOUT_MS = 15_000;
const SAMPLE_MESSAGES = 10;
const PATH = 'source.kafka';

/**
 * The brokers are allowed and reachable, they accept the credentials, every topic exists, and
 * with validateSamples the first messages parse as the pipe maps them (README, "Pipes":
 * connectivity failures are 400s). Messages name no secret: the client's errors carry none.
 */
export async function kafkaProblems(config: PipeConfig, context: CheckContext): Promise<Problem[]> {
  const source = config.source.kafka;
  if (!source) return [];
  const unsupported = unsupportedKafka(source);
  if (unsupported) return [{ path: `${PATH}.${unsupported.field}`, message: unsupported.message }];
  let connection: ReturnType<typeof connectionOptions>;
  try {
    connection = connectionOptions(source, context);
    if (!context.allowPrivateSources) {
      for (const broker of parseBrokers(source)) {
        const problem = await privateHostProblem(broker.host, 'SLUICE_ALLOW_PRIVATE_SOURCES');
        if (problem) return [{ path: `${PATH}.brokers`, message: problem }];
      }
    }
  } catch (error) {
    return [{ path: `${PATH}.brokers`, message: (error as Error).message }];
  }
  const consumer = new RawFetchConsumer({
    ...connection,
    clientId: 'sluice-check',
    groupId: source.consumerGroup ?? 'sluice-check',
    retries: 1,
    timeout: CHECK_TIMEOUT_MS,
    connectTimeout: CHECK_TIMEOUT_MS,
  });
  try {
    const topics = topicNames(source);
    let existing: Set<string>;
    try {
      // Connected and authenticated first: a refusal must not read as a missing topic.
      await consumer.metadata({ topics: [], forceUpdate: true });
      existing = await listTopics(consumer, topics);
    } catch (error) {
      return [connectionProblem(error)];
    }
    const missing = topics.filter((topic) => !existing.has(topic));
    if (missing.length > 0) {
      return [{ path: `${PATH}.topics`, message: `no such topic on the brokers: ${missing.join(', ')}` }];
    }
    const how = kafkaMessagePlan(config, context.allowPrivateSources);
    try {
      await how.registry?.check();
      if (!context.validateSamples) return [];
      const problem = await samplesProblem(how, context, consumer, topics);
      return problem ? [problem] : [];
    } catch (error) {
      if (!(error instanceof RegistryError)) throw error;
      return [{ path: `${PATH}.schemaRegistry.${error.field}`, message: error.message }];
    }
  } finally {
    await consumer.close().catch((error: unknown) => {
      context.logger?.warn({ err: error }, 'a Kafka consumer of the create checks did not close cleanly');
    });
  }
}

/** The topics that exist among those named (metadata names only what it was asked for). */
async function listTopics(consumer: KafkaConsumer, topics: string[]): Promise<Set<string>> {
  const found = new Set<string>();
  for (const topic of topics) {
    try {
      const metadata = await consumer.metadata({ topics: [topic], forceUpdate: true });
      if (metadata.topics.has(topic)) found.add(topic);
    } catch (error) {
      const codes = codesOf(error);
      if (!codes.includes('PLT_KFK_RESPONSE') || codes.includes('PLT_KFK_AUTHENTICATION')) throw error;
    }
  }
  return found;
}

function connectionProblem(error: unknown): Problem {
  const codes = codesOf(error);
  if (codes.includes(ROLE_REFUSED)) {
    const reason = messageWithCode(error, ROLE_REFUSED);
    return { path: `${PATH}.iamRole`, message: reason ?? 'cannot assume iamRole' };
  }
  if (codes.includes('PLT_KFK_AUTHENTICATION') || saslStateRefused(error)) {
    return { path: `${PATH}.credentials`, message: 'the brokers refused the credentials' };
  }
  const tls = tlsFailureOf(error);
  if (tls) return { path: `${PATH}.caCertificate`, message: `TLS with the brokers failed: ${tls}` };
  return {
    path: `${PATH}.brokers`,
    message: `cannot reach the brokers: ${messagesOf(error).at(-1) ?? 'no answer'}`,
  };
}

/** validateSamples: the first messages of the topics parse and map as the pipe will. */
async function samplesProblem(
  how: MessagePlan<KafkaRecord>,
  context: CheckContext,
  consumer: KafkaConsumer,
  topics: string[],
): Promise<Problem | undefined> {
  const samples = await firstMessages(consumer, topics, SAMPLE_MESSAGES);
  const reading = { sourceReader: context.sourceReader, scratch: context.scratch };
  const problem = await sampleProblem(reading, how, samples);
  return (
    problem && {
      path: 'source.validateSamples',
      message: `${kafkaMessages.describe(problem.message)}: ${problem.reason}`,
    }
  );
}

/** The messages at the start of every partition of the topics, as one fetch brings them, up to `limit`. */
export async function firstMessages(
  consumer: KafkaConsumer,
  topics: string[],
  limit: number,
): Promise<KafkaRecord[]> {
  await requireTopics(consumer, topics);
  const starts = await consumer.listOffsets({ topics, timestamp: EARLIEST });
  const wants = [...starts].flatMap(([topic, offsets]) =>
    offsets.map((offset, partition) => ({ topic, partition, offset })),
  );
  const samples: KafkaRecord[] = [];
  for (const answer of await fetchOnce(consumer, topics, wants)) {
    samples.push(...answer.messages.slice(0, limit - samples.length));
  }
  return samples;
}
