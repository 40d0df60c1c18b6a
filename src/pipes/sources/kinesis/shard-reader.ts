import { sleep } from '../../../concurrency.js';
import { awsErrorName } from './client.js';
import { readPage, shardIterator } from './get-records.js';
import type { KinesisMessage } from './records.js';
import type { Page, ShardHost, StartAt } from './shard-host.js';
import { subscribeShard } from './subscribe.js';

/** Kinesis allows five GetRecords a second per shard: a reader asks at most that often. */
const MIN_CALL_MS = 200;
/** A shard with nothing new is asked again after this. */
const IDLE_MS = 250;

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

  /** The last page read was as long as a page may be. */
  private lastPageFull = false;

  /** The shard holds records not read yet: a backlog, whose batches take the whole wait (flush.ts). */
  get behind(): boolean {
    return this.lastPageFull || (this.millisBehindLatest ?? 0) > 0;
  }
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

  /** Holding a batch's worth: reading waits for a claim (backpressure). */
  get full(): boolean {
    return this.messages.length >= this.host.buffer.rows || this.bytes >= this.host.buffer.bytes;
  }

  /** Holds a page's records for the run to claim. */
  hold(page: Page): void {
    if (page.messages.length > 0) {
      this.host.arrived();
      this.since ??= Date.now();
      this.messages.push(...page.messages);
      this.bytes += page.bytes;
      this.readTo = (page.messages.at(-1) as KinesisMessage).sequence;
    }
    this.millisBehindLatest = page.millisBehindLatest;
    this.lastPageFull = page.full ?? false;
  }

  private async read(): Promise<void> {
    const { host } = this;
    const ended = host.fanOut
      ? await subscribeShard(host, host.fanOut, this, this.start, () => this.markPositioned())
      : await this.poll();
    if (ended && !host.signal.aborted) {
      this.finished = true;
      this.millisBehindLatest = 0;
      host.ended(this.id);
    }
  }

  /** GetRecords in a loop; true once the end of a closed shard is read. */
  private async poll(): Promise<boolean> {
    const { host } = this;
    let iterator: string | null = await shardIterator(host, this.id, this.start);
    this.markPositioned();
    let lastCall = 0;
    while (iterator && !host.signal.aborted) {
      if (this.full) {
        await sleep(50, host.signal);
        continue;
      }
      await sleep(Math.max(0, lastCall + MIN_CALL_MS - Date.now()), host.signal);
      lastCall = Date.now();
      let page: Page;
      try {
        page = await readPage(host, this.id, iterator, host.pageLimit());
      } catch (error) {
        if (awsErrorName(error) !== 'ExpiredIteratorException') throw error;
        // Iterators live five minutes: one held past that (a long backpressure) is made again.
        const from: StartAt = this.readTo
          ? { type: 'AFTER_SEQUENCE_NUMBER', sequence: this.readTo }
          : this.start;
        iterator = await shardIterator(host, this.id, from);
        continue;
      }
      this.hold(page);
      iterator = page.next;
      if (page.messages.length === 0 && iterator) await sleep(IDLE_MS, host.signal);
    }
    return !iterator;
  }
}
