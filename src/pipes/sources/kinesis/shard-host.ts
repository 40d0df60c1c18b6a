import type { _Record } from '@aws-sdk/client-kinesis';
import type { Logger } from 'pino';
import { BackoffDelays } from '../../../backoff.js';
import { sleep } from '../../../concurrency.js';
import { NETWORK_CODES, nestedErrors } from '../failure-code.js';
import { awsErrorName, type KinesisConnection } from './client.js';
import type { PipeConsumer } from './consumer.js';
import { type KinesisMessage, kinesisMessage } from './records.js';

/** Waits between tries of a shard's call: 250 ms doubling to 10 s, each jittered (src/backoff.ts). */
const BACKOFF = { firstMs: 250, maxMs: 10_000 };

/** Errors that pass by themselves: the reader waits, with backoff, and asks again. */
const PASSING = new Set([
  'ProvisionedThroughputExceededException',
  'LimitExceededException',
  'KMSThrottlingException',
  'InternalFailure',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'TimeoutError',
]);

/** Where a shard's reading starts. */
export type StartAt =
  | { type: 'AFTER_SEQUENCE_NUMBER'; sequence: string }
  | { type: 'AT_SEQUENCE_NUMBER'; sequence: string }
  | { type: 'TRIM_HORIZON' }
  | { type: 'LATEST' }
  | { type: 'AT_TIMESTAMP'; at: Date };

/** What a shard's reader needs from the run it belongs to. */
export interface ShardHost {
  readonly connection: KinesisConnection;
  readonly streamName: string;
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** A reader holding this much waits for its records to be claimed (backpressure). */
  readonly buffer: { rows: number; bytes: number };
  /** Enhanced fan-out: the shard is read with SubscribeToShard as this consumer. */
  readonly fanOut?: FanOut;
  /** The last listing shows the shard closed (split or merged): its records end. */
  closed(shard: string): boolean;
  /** A read that cannot go on now and is retried (throttled, unreachable); undefined once it reads. */
  trouble(shard: string, reason: string | undefined): void;
  /** A read that cannot go on at all: the run fails and starts again from the store's cursor. */
  failed(error: unknown): void;
  /** The shard's end was reached: its children may start once its records are committed. */
  ended(shard: string): void;
  /** A read brought records (the run's first answer waits for that: messages/first-messages.ts). */
  arrived(): void;
  /** The most records a GetRecords call asks for now: until the run's first claim, a share of its first batch. */
  pageLimit(): number;
}

/**
 * Waits out a shard's passing troubles with backoff, each shown on the pipe (Degraded) until a
 * call goes through again; any other error is thrown.
 */
export class Backoff {
  private readonly waits = new BackoffDelays({ baseMs: BACKOFF.firstMs, maxMs: BACKOFF.maxMs });

  constructor(
    private readonly host: ShardHost,
    private readonly shard: string,
    /** Errors that pass here besides the common ones. */
    private readonly alsoPassing: ReadonlySet<string> = new Set(),
  ) {}

  /** A call went through: the next trouble waits from the start. */
  succeeded(): void {
    this.waits.reset();
    this.host.trouble(this.shard, undefined);
  }

  async failed(error: unknown, doing: string): Promise<void> {
    if (this.host.signal.aborted) throw error;
    const name = awsErrorName(error);
    const message = (error as Error)?.message ?? String(error);
    // A network that dropped the call: Node's code under the SDK's error ("socket hang up" is ECONNRESET).
    const network = nestedErrors(error).some((e) => typeof e.code === 'string' && NETWORK_CODES.has(e.code));
    const passes = PASSING.has(name) || this.alsoPassing.has(name) || network;
    if (!passes) throw error;
    this.host.trouble(
      this.shard,
      `Kinesis: ${doing} shard ${this.shard} failed (${name}: ${message}); retrying`,
    );
    await sleep(this.waits.next(), this.host.signal);
  }
}

/** Calls Kinesis, waiting out throttling and outages with backoff (the host shows them). */
export async function patiently<T>(host: ShardHost, shard: string, call: () => Promise<T>): Promise<T> {
  const backoff = new Backoff(host, shard);
  for (;;) {
    try {
      const answer = await call();
      backoff.succeeded();
      return answer;
    } catch (error) {
      await backoff.failed(error, 'reading');
    }
  }
}

/** Records read from a shard at once (a GetRecords page, a SubscribeToShard event). */
export interface Page {
  messages: KinesisMessage[];
  bytes: number;
  /** Null at the end of a closed shard. */
  next: string | null;
  millisBehindLatest: number | null;
  /** As many records as a read may give: more wait in the shard. */
  full?: boolean;
}

/** A page of a shard's records, as GetRecords and a SubscribeToShard event both give them. */
export function pageOf(
  records: _Record[] | undefined,
  where: { stream: string; shard: string },
  next: string | undefined,
  millisBehindLatest: number | undefined,
): Page {
  const messages = (records ?? []).map((record) => kinesisMessage(record, where.stream, where.shard));
  const bytes = messages.reduce((n, message) => n + message.value.length, 0);
  return { messages, bytes, next: next ?? null, millisBehindLatest: millisBehindLatest ?? null };
}

/** A pipe's registered consumer and the HTTP/2 client its subscriptions go through. */
export interface FanOut {
  connection: KinesisConnection;
  consumer: PipeConsumer;
}
