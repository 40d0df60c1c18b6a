import { CodedError } from '../../../errors.js';
import { awsErrorName } from './client.js';
import { type Page, pageOf, patiently, type ShardHost, type StartAt } from './shard-host.js';
import { listShards } from './shards.js';

/** GetRecords' largest page. */
export const PAGE = 10_000;
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
  if (!answer.ShardIterator)
    throw new CodedError('SLUICE_ERR_SOURCE', `Kinesis gave no iterator for shard ${shard}`);
  return answer.ShardIterator;
}

/** One GetRecords call of at most `limit` records, its records as messages. */
export async function readPage(
  host: ShardHost,
  shard: string,
  iterator: string,
  limit = PAGE,
): Promise<Page> {
  const { client, sdk } = host.connection;
  const answer = await patiently(host, shard, () =>
    client.send(new sdk.GetRecordsCommand({ ShardIterator: iterator, Limit: limit }), {
      abortSignal: host.signal,
    }),
  );
  const where = { stream: host.streamName, shard };
  const page = pageOf(answer.Records, where, answer.NextShardIterator, answer.MillisBehindLatest);
  // A page as long as asked for says more waits, whatever MillisBehindLatest says (kinesalite
  // says 0 until a shard closes).
  return { ...page, full: page.messages.length >= limit };
}

/**
 * A closed shard read to its end after `from`: GetRecords there gives no record and no next
 * iterator. Asked when a subscription is caught up on a shard the listing shows closed, for
 * servers that never send the subscription's last event (kinesis-local).
 */
export async function readToEnd(host: ShardHost, shard: string, from: StartAt): Promise<boolean> {
  const page = await readPage(host, shard, await shardIterator(host, shard, from));
  return page.messages.length === 0 && page.next === null;
}
