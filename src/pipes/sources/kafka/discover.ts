import type { DiscoveryContext, DiscoverySource, SchemaDiscovery } from '../discovery.js';
import { DiscoveryProblem, discoveryConfig, throwIfProblems } from '../discovery.js';
import { inferMessages, RegistryError } from '../messages/index.js';
import { firstMessages, kafkaProblems } from './checks.js';
import { connectionOptions, type KafkaConfig, topicNames } from './connection.js';
import { KAFKA_VIRTUAL_COLUMNS, kafkaMessagePlan } from './messages.js';
import { RawFetchConsumer } from './raw-fetch.js';

const PATH = 'source.kafka';
/** The first messages of the topics, as many as one fetch from their start brings, up to this. */
const SAMPLE_MESSAGES = 100;
const TIMEOUT_MS = 15_000;

/**
 * The fields of a Kafka source's first messages, typed by the engine (messages/infer.ts): the
 * brokers, credentials, topics and schema registry are checked as at create (checks.ts), then the
 * messages at the start of each partition are read, nothing committed, no group joined.
 */
export async function discoverKafka(
  source: DiscoverySource,
  context: DiscoveryContext,
): Promise<SchemaDiscovery> {
  const config = discoveryConfig(source);
  throwIfProblems(await kafkaProblems(config, { ...context, validateSamples: false }));
  const kafka = source.kafka as KafkaConfig;
  const topics = topicNames(kafka);
  const consumer = new RawFetchConsumer({
    ...connectionOptions(kafka, context),
    clientId: 'sluice-discovery',
    groupId: 'sluice-discovery',
    retries: 1,
    timeout: TIMEOUT_MS,
    connectTimeout: TIMEOUT_MS,
  });
  try {
    const samples = await firstMessages(consumer, topics, SAMPLE_MESSAGES);
    if (samples.length === 0) {
      throw new DiscoveryProblem({
        path: `${PATH}.topics`,
        message: `${topics.join(', ')} ${topics.length > 1 ? 'hold' : 'holds'} no messages yet: produce some first, or write destination.columns by hand`,
      });
    }
    const how = kafkaMessagePlan(config, context.allowPrivateSources);
    let inferred: Awaited<ReturnType<typeof inferMessages>>;
    try {
      const reading = { sourceReader: context.sourceReader, scratch: context.scratch };
      inferred = await inferMessages(reading, how, samples, `${PATH}.format`);
    } catch (error) {
      if (!(error instanceof RegistryError)) throw error;
      throw new DiscoveryProblem({ path: `${PATH}.schemaRegistry.${error.field}`, message: error.message });
    }
    return {
      fields: inferred.fields,
      records: inferred.records,
      meta: {
        format: kafka.format,
        sampledMessages: String(samples.length),
        ...(inferred.refused.length > 0 ? { unreadable: inferred.refused.slice(0, 5).join('; ') } : {}),
        virtualColumns: KAFKA_VIRTUAL_COLUMNS.join(', '),
      },
    };
  } finally {
    await consumer.close().catch((error: unknown) => {
      context.logger?.warn({ err: error }, 'a Kafka consumer of schema discovery did not close cleanly');
    });
  }
}
