import type { StartingPosition } from '@aws-sdk/client-kinesis';
import { sleep } from '../../../concurrency.js';
import { awsErrorName } from './client.js';
import { readToEnd } from './get-records.js';
import { Backoff, type FanOut, type Page, pageOf, type ShardHost, type StartAt } from './shard-host.js';

/** Kinesis takes one SubscribeToShard a second per shard and consumer. */
const SUBSCRIBE_EVERY_MS = 1_000;
const IN_USE = 'ResourceInUseException';
/**
 * A subscription refused because the shard's last one is still open passes: AWS refuses a new
 * one for five seconds after the last. One refused for longer is held by a run that is gone.
 */
const SUBSCRIPTION_PASSING = new Set([IN_USE]);
const HELD_BY_THE_GONE_AFTER_MS = 15_000;

/** What the subscription fills: the shard's reader. */
export interface SubscribedShard {
  readonly id: string;
  readonly full: boolean;
  hold(page: Page): void;
}

/**
 * Reads a shard with enhanced fan-out: SubscribeToShard pushes its records as events over HTTP/2
 * for five minutes, then the next subscription starts after the last event's continuation. A
 * reader holding a batch's worth stops taking events, and HTTP/2's flow control holds the server
 * back. Resolves true once the end of a closed shard was read (an event with no continuation),
 * false when the run stops.
 */
export async function subscribeShard(
  host: ShardHost,
  fanOut: FanOut,
  shard: SubscribedShard,
  start: StartAt,
  positioned: () => void,
): Promise<boolean> {
  const { client, sdk } = fanOut.connection;
  const backoff = new Backoff(host, shard.id, SUBSCRIPTION_PASSING);
  let from = start;
  let subscribedAt = 0;
  let inUseSince: number | undefined;
  const where = { stream: host.streamName, shard: shard.id };
  while (!host.signal.aborted) {
    await sleep(Math.max(0, subscribedAt + SUBSCRIBE_EVERY_MS - Date.now()), host.signal);
    subscribedAt = Date.now();
    // Ending a subscription takes aborting its request: leaving the loop keeps the shard held.
    const subscription = new AbortController();
    const consumerArn = fanOut.consumer.arn;
    try {
      const answer = await client.send(
        new sdk.SubscribeToShardCommand({
          ConsumerARN: consumerArn,
          ShardId: shard.id,
          StartingPosition: startingPosition(from),
        }),
        { abortSignal: AbortSignal.any([host.signal, subscription.signal]) },
      );
      for await (const event of answer.EventStream ?? []) {
        const records = event.SubscribeToShardEvent;
        if (!records) continue;
        backoff.succeeded();
        inUseSince = undefined;
        positioned();
        const page = pageOf(
          records.Records,
          where,
          records.ContinuationSequenceNumber,
          records.MillisBehindLatest,
        );
        shard.hold(page);
        const { next, messages } = page;
        if (!next) return true;
        from = { type: 'AFTER_SEQUENCE_NUMBER', sequence: next };
        const caughtUp = messages.length === 0 && records.MillisBehindLatest === 0;
        if (caughtUp && host.closed(shard.id) && (await readToEnd(host, shard.id, from))) return true;
        while (shard.full && !host.signal.aborted) await sleep(50, host.signal);
      }
    } catch (error) {
      if (host.signal.aborted) return false;
      // The consumer was registered again (taken back) under this subscription: subscribe anew.
      if (
        awsErrorName(error) === 'ResourceNotFoundException' &&
        (await fanOut.consumer.changedFrom(consumerArn))
      )
        continue;
      if (awsErrorName(error) === IN_USE) {
        inUseSince ??= Date.now();
        if (Date.now() - inUseSince > HELD_BY_THE_GONE_AFTER_MS) {
          await fanOut.consumer.takeBack(consumerArn);
          inUseSince = undefined;
          continue;
        }
      }
      await backoff.failed(error, 'the subscription to');
    } finally {
      subscription.abort();
    }
  }
  return false;
}

function startingPosition(start: StartAt): StartingPosition {
  switch (start.type) {
    case 'AFTER_SEQUENCE_NUMBER':
    case 'AT_SEQUENCE_NUMBER':
      return { Type: start.type, SequenceNumber: start.sequence };
    case 'AT_TIMESTAMP':
      return { Type: start.type, Timestamp: start.at };
    default:
      return { Type: start.type };
  }
}
