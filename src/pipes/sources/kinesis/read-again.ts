import { sleep } from '../../../concurrency.js';
import type { KinesisRange } from './cursor.js';
import { readPage, shardIterator } from './get-records.js';
import type { KinesisMessage } from './records.js';
import type { ShardHost } from './shard-host.js';

/** Pages of nothing after which a shard is taken to hold no more of a range (the records expired). */
const EMPTY_PAGES_AT_END = 3;

/**
 * A range claimed by an earlier run, read again exactly: each shard from its first sequence
 * number (AT_SEQUENCE_NUMBER) up to its last. Records the stream no longer holds (past its
 * retention) cannot come back: what is left is loaded, and the log says how many were missing.
 */
export async function readRangeAgain(host: ShardHost, range: KinesisRange): Promise<KinesisMessage[]> {
  host.logger.info({ range: range.parts }, 'reading a range claimed before a restart again');
  const messages: KinesisMessage[] = [];
  for (const part of range.parts) {
    const read = await readPart(host, part);
    if (read.length !== part.records)
      host.logger.warn(
        { shard: part.shard, claimed: part.records, found: read.length },
        'a claimed Kinesis range holds fewer records than when it was claimed (past the retention?)',
      );
    messages.push(...read);
  }
  return messages;
}

async function readPart(host: ShardHost, part: KinesisRange['parts'][number]): Promise<KinesisMessage[]> {
  const last = BigInt(part.last);
  const found: KinesisMessage[] = [];
  let iterator: string | null = await shardIterator(host, part.shard, {
    type: 'AT_SEQUENCE_NUMBER',
    sequence: part.first,
  });
  let empty = 0;
  while (iterator && !host.signal.aborted) {
    const page = await readPage(host, part.shard, iterator);
    for (const message of page.messages) {
      if (BigInt(message.sequence) > last) return found;
      found.push(message);
    }
    if (found.length > 0 && BigInt((found.at(-1) as KinesisMessage).sequence) === last) return found;
    empty = page.messages.length === 0 ? empty + 1 : 0;
    // Caught up with the shard's end and still short: the rest is gone.
    if (empty >= EMPTY_PAGES_AT_END && page.millisBehindLatest === 0) return found;
    iterator = page.next;
    // Kinesis allows five GetRecords a second per shard.
    if (page.messages.length === 0) await sleep(200, host.signal);
  }
  if (host.signal.aborted) throw new Error('the pipe stopped while reading a range again');
  return found;
}
