import type { Logger } from 'pino';
import { sleep } from '../../../concurrency.js';
import { awsErrorName, type KinesisConnection } from './client.js';
import { type KinesisMessage, kinesisMessage } from './records.js';
import { listShards } from './shards.js';

/** GetRecords' largest page. */
const PAGE = 10_000;
/** Kinesis allows five GetRecords a second per shard: a reader asks at most that often. */
const MIN_CALL_MS = 200;
/** A shard with nothing new is asked again after this. */
const IDLE_MS = 250;
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
const NETWORK = /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|socket hang up/i;

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
  /** A read that cannot go on now and is retried (throttled, unreachable); undefined once it reads. */
  trouble(shard: string, reason: string | undefined): void;
  /** A read that cannot go on at all: the run fails and starts again from the store's cursor. */
  failed(error: unknown): void;
  /** The shard's end was reached: its children may start once its records are committed. */
  ended(shard: string): void;
}

/** Calls Kinesis, waiting out throttling and outages with backoff (the host shows them). */
export async function patiently<T>(host: ShardHost, shard: string, call: () => Promise<T>): Promise<T> {
  let wait = BACKOFF.firstMs;
  for (;;) {
    try {
      const answer = await call();
      host.trouble(shard, undefined);
      return answer;
    } catch (error) {
      if (host.signal.aborted) throw error;
      const name = awsErrorName(error);
      const message = (error as Error)?.message ?? String(error);
      if (!PASSING.has(name) && !NETWORK.test(message) && !NETWORK.test(name)) throw error;
      host.trouble(shard, `Kinesis: reading shard ${shard} failed (${name}: ${message}); retrying`);
      await sleep(wait, host.signal);
      wait = Math.min(BACKOFF.maxMs, wait * 2);
    }
  }
}

/** A GetShardIterator answers at once; one that does not is taken as not answering. */
const ITERATOR_TIMEOUT_MS = 5_000;

/**
 * An iterator of the shard from `start`. Some compatible servers (kinesalite) never answer
 * AT_TIMESTAMP when no record of the shard is that new: when the stream itself answers but that
 * call does not, twice, the shard is read from its tip (LATEST), which is where such an iterator
 * points, and the log says so.
 */
export async function shardIterator(host: ShardHost, shard: string, start: StartAt): Promise<string> {
  let silent = 0;
  for (;;) {
    try {
      return await iteratorFrom(host, shard, start);
    } catch (error) {
      if (start.type !== 'AT_TIMESTAMP' || host.signal.aborted || awsErrorName(error) !== 'TimeoutError')
        throw error;
      await patiently(host, shard, () => listShards(host.connection, host.streamName));
      silent += 1;
      if (silent < 2) continue;
      host.logger.warn(
        { shard, at: start.at.toISOString() },
        'Kinesis did not answer AT_TIMESTAMP for a shard with no record that new: reading it from LATEST',
      );
      return iteratorFrom(host, shard, { type: 'LATEST' });
    }
  }
}

async function iteratorFrom(host: ShardHost, shard: string, start: StartAt): Promise<string> {
  const { client, sdk } = host.connection;
  const answer = await patiently(host, shard, () =>
    client.send(
      new sdk.GetShardIteratorCommand({
        StreamName: host.streamName,
        ShardId: shard,
        ShardIteratorType: start.type,
        ...('sequence' in start ? { StartingSequenceNumber: start.sequence } : {}),
        ...('at' in start ? { Timestamp: start.at } : {}),
      }),
      { abortSignal: host.signal, requestTimeout: ITERATOR_TIMEOUT_MS },
    ),
  );
  if (!answer.ShardIterator) throw new Error(`Kinesis gave no iterator for shard ${shard}`);
  return answer.ShardIterator;
}

export interface Page {
  messages: KinesisMessage[];
  bytes: number;
  /** Null at the end of a closed shard. */
  next: string | null;
  millisBehindLatest: number | null;
}

/** One GetRecords call, its records as messages. */
export async function readPage(host: ShardHost, shard: string, iterator: string): Promise<Page> {
  const { client, sdk } = host.connection;
  const answer = await patiently(host, shard, () =>
    client.send(new sdk.GetRecordsCommand({ ShardIterator: iterator, Limit: PAGE }), {
      abortSignal: host.signal,
    }),
  );
  const messages = (answer.Records ?? []).map((record) => kinesisMessage(record, host.streamName, shard));
  const bytes = messages.reduce((n, message) => n + message.value.length, 0);
  return {
    messages,
    bytes,
    next: answer.NextShardIterator ?? null,
    millisBehindLatest: answer.MillisBehindLatest ?? null,
  };
}

/**
 * Reads one shard into memory for the run to claim: GetRecords in a loop from where the store's
 * cursor says, at most five calls a second, holding off while a batch's worth waits. An expired
 * iterator is made again after the last record read; throttling waits with backoff.
 */
export class ShardReader {
  messages: KinesisMessage[] = [];
  bytes = 0;
  /** When the oldest record held arrived here. */
  since: number | undefined;
  /** The last record read (not yet claimed, perhaps). */
  private readTo: string | undefined;
  /** The end of a closed shard was reached. */
  finished = false;
  /** Records of it are claimed in a batch not yet committed: it is not claimed again until then. */
  inFlight = 0;
  /** The last sequence number the store committed, as this run saw it. */
  committedTo: string | undefined;
  millisBehindLatest: number | null = null;
  private loop: Promise<void> | undefined;
  private markPositioned: () => void = () => {};
  /** Settles once the reader holds its first iterator (or failed to get one). */
  readonly positioned = new Promise<void>((resolve) => {
    this.markPositioned = resolve;
  });

  constructor(
    private readonly host: ShardHost,
    readonly id: string,
    readonly replica: number,
    private readonly start: StartAt,
    /** The last sequence number claimed before this run (the store's cursor). */
    claimedTo: string | undefined,
  ) {
    this.committedTo = claimedTo;
  }

  run(): void {
    this.loop = this.read()
      .catch((error: unknown) => {
        if (!this.host.signal.aborted) this.host.failed(error);
      })
      .finally(() => this.markPositioned());
  }

  /** Takes the records held, up to the limits, for a claim. */
  take(rows: number, bytes: number): KinesisMessage[] {
    let count = 0;
    let size = 0;
    while (count < this.messages.length && count < rows) {
      const next = (this.messages[count] as KinesisMessage).value.length;
      if (count > 0 && size + next > bytes) break;
      size += next;
      count += 1;
    }
    const taken = this.messages.slice(0, count);
    this.messages = this.messages.slice(count);
    this.bytes -= size;
    this.since = this.messages.length > 0 ? Date.now() : undefined;
    return taken;
  }

  /** Nothing more will come from it: its end was read and every record of it committed. */
  get drained(): boolean {
    return this.finished && this.messages.length === 0 && this.inFlight === 0;
  }

  async stopped(): Promise<void> {
    await this.loop;
  }

  private async read(): Promise<void> {
    const { host } = this;
    let iterator: string | null = await shardIterator(host, this.id, this.start);
    this.markPositioned();
    let lastCall = 0;
    while (iterator && !host.signal.aborted) {
      if (this.messages.length >= host.buffer.rows || this.bytes >= host.buffer.bytes) {
        await sleep(50, host.signal);
        continue;
      }
      await sleep(Math.max(0, lastCall + MIN_CALL_MS - Date.now()), host.signal);
      lastCall = Date.now();
      let page: Page;
      try {
        page = await readPage(host, this.id, iterator);
      } catch (error) {
        if (awsErrorName(error) !== 'ExpiredIteratorException') throw error;
        // Iterators live five minutes: one held past that (a long backpressure) is made again.
        const from: StartAt = this.readTo
          ? { type: 'AFTER_SEQUENCE_NUMBER', sequence: this.readTo }
          : this.start;
        iterator = await shardIterator(host, this.id, from);
        continue;
      }
      if (page.messages.length > 0) {
        this.since ??= Date.now();
        this.messages.push(...page.messages);
        this.bytes += page.bytes;
        this.readTo = (page.messages.at(-1) as KinesisMessage).sequence;
      }
      this.millisBehindLatest = page.millisBehindLatest;
      iterator = page.next;
      if (page.messages.length === 0 && iterator) await sleep(IDLE_MS, host.signal);
    }
    if (!iterator && !host.signal.aborted) {
      this.finished = true;
      this.millisBehindLatest = 0;
      host.ended(this.id);
    }
  }
}
