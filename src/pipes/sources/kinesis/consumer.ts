import type { Logger } from 'pino';
import { sleep } from '../../../concurrency.js';
import { CodedError } from '../../../errors.js';
import { awsErrorName, type KinesisConnection } from './client.js';
import { streamArn } from './fan-out.js';

/** How long a consumer may take to become ACTIVE, or to go once deregistered (AWS: seconds). */
const SETTLES_WITHIN_MS = 60_000;
const ASK_EVERY_MS = 250;

/** The consumer a pipe registers, named as its Kafka consumer group is (`pipes-<pipe id>`). */
export function consumerName(pipeId: string): string {
  return `pipes-${pipeId}`;
}

interface ConsumerPlace {
  connection: KinesisConnection;
  streamName: string;
  pipeId: string;
  signal: AbortSignal;
  logger: Logger;
}

/**
 * The pipe's stream consumer (enhanced fan-out): registered on its first run and found again on
 * the next ones; SubscribeToShard names it by its ARN, which changes when it is taken back.
 */
export class PipeConsumer {
  private renewing: Promise<void> | undefined;

  private constructor(
    private readonly place: ConsumerPlace,
    /** The ARN subscriptions use now. */
    public arn: string,
  ) {}

  static async register(place: ConsumerPlace): Promise<PipeConsumer> {
    return new PipeConsumer(place, await activeConsumer(place));
  }

  /**
   * Subscriptions of the consumer `stale` are held by a run that is gone (this node was killed
   * while subscribed, and the server keeps the subscription until it expires): no other run reads
   * this pipe, so the consumer is deregistered, which ends them, and registered again. Shards that
   * meet the same wall at once wait for one renewal.
   */
  async takeBack(stale: string): Promise<void> {
    if (this.arn !== stale) return;
    this.renewing ??= this.renew().finally(() => {
      this.renewing = undefined;
    });
    await this.renewing;
  }

  /** Whether the consumer is no longer `arn` (once a renewal under way is done). */
  async changedFrom(arn: string): Promise<boolean> {
    await this.renewing;
    return this.arn !== arn;
  }

  private async renew(): Promise<void> {
    const { place } = this;
    place.logger.warn(
      { pipeId: place.pipeId, consumer: consumerName(place.pipeId) },
      "the Kinesis consumer's subscriptions are held by a run that is gone: registering it again",
    );
    await deregistered(place);
    this.arn = await activeConsumer(place);
  }
}

/** Registers the consumer (or finds it registered) and waits until it is ACTIVE. */
async function activeConsumer(place: ConsumerPlace): Promise<string> {
  const { client, sdk } = place.connection;
  const StreamARN = await streamArn(place.connection, place.streamName, place.signal);
  const ConsumerName = consumerName(place.pipeId);
  try {
    await client.send(new sdk.RegisterStreamConsumerCommand({ StreamARN, ConsumerName }), {
      abortSignal: place.signal,
    });
  } catch (error) {
    if (awsErrorName(error) !== 'ResourceInUseException') throw error;
  }
  const deadline = Date.now() + SETTLES_WITHIN_MS;
  for (;;) {
    const { ConsumerDescription: consumer } = await client.send(
      new sdk.DescribeStreamConsumerCommand({ StreamARN, ConsumerName }),
      { abortSignal: place.signal },
    );
    if (consumer?.ConsumerStatus === 'ACTIVE' && consumer.ConsumerARN) return consumer.ConsumerARN;
    if (Date.now() > deadline)
      throw new CodedError(
        'SLUICE_ERR_SOURCE',
        `the Kinesis consumer ${ConsumerName} is still ${consumer?.ConsumerStatus} after a minute`,
      );
    await sleep(ASK_EVERY_MS, place.signal);
  }
}

/** Deregisters the consumer and waits until it is gone (a name is free again only then). */
async function deregistered(place: ConsumerPlace): Promise<void> {
  const { client, sdk } = place.connection;
  const StreamARN = await streamArn(place.connection, place.streamName, place.signal);
  const ConsumerName = consumerName(place.pipeId);
  const deadline = Date.now() + SETTLES_WITHIN_MS;
  try {
    await client.send(new sdk.DeregisterStreamConsumerCommand({ StreamARN, ConsumerName }), {
      abortSignal: place.signal,
    });
    for (;;) {
      await client.send(new sdk.DescribeStreamConsumerCommand({ StreamARN, ConsumerName }), {
        abortSignal: place.signal,
      });
      if (Date.now() > deadline)
        throw new CodedError(
          'SLUICE_ERR_SOURCE',
          `the Kinesis consumer ${ConsumerName} is still there after a minute`,
        );
      await sleep(ASK_EVERY_MS, place.signal);
    }
  } catch (error) {
    if (awsErrorName(error) !== 'ResourceNotFoundException') throw error;
  }
}

/** A deleted pipe's consumer goes (AWS bills each registered consumer by the shard hour). */
export async function deregisterConsumer(
  connection: KinesisConnection,
  streamName: string,
  pipeId: string,
  logger: Logger,
): Promise<void> {
  const consumer = consumerName(pipeId);
  try {
    const StreamARN = await streamArn(connection, streamName);
    await connection.client.send(
      new connection.sdk.DeregisterStreamConsumerCommand({ StreamARN, ConsumerName: consumer }),
    );
    logger.info({ pipeId, consumer }, 'deregistered the Kinesis consumer of a deleted pipe');
  } catch (error) {
    if (awsErrorName(error) === 'ResourceNotFoundException') return;
    throw new CodedError(
      'SLUICE_ERR_SOURCE_CLEANUP',
      `Kinesis: could not deregister the consumer ${consumer} of stream ${streamName} (${error instanceof Error ? error.message : String(error)})`,
      { cause: error },
    );
  }
}
