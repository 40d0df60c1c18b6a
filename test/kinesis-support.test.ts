import {
  type _Record,
  DescribeStreamCommand,
  DescribeStreamSummaryCommand,
  GetRecordsCommand,
  type GetRecordsCommandOutput,
  GetShardIteratorCommand,
  type GetShardIteratorCommandInput,
  KinesisClient,
  ListShardsCommand,
  ListStreamsCommand,
  RegisterStreamConsumerCommand,
  SubscribeToShardCommand,
  UpdateShardCountCommand,
} from '@aws-sdk/client-kinesis';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { kinesisClient, type RunningKinesis, startKinesis, startThrottlingProxy } from './support/kinesis.js';

let kinesis: RunningKinesis;

beforeAll(async () => {
  kinesis = await startKinesis({ shardLimit: 50 });
});

afterAll(async () => {
  await kinesis?.stop();
});

async function iterator(
  input: Omit<GetShardIteratorCommandInput, 'ShardIteratorType'> & {
    ShardIteratorType?: GetShardIteratorCommandInput['ShardIteratorType'];
  },
): Promise<string> {
  const { ShardIterator } = await kinesis.client.send(
    new GetShardIteratorCommand({ ShardIteratorType: 'TRIM_HORIZON', ...input }),
  );
  if (!ShardIterator) throw new Error('no iterator');
  return ShardIterator;
}

/**
 * Reads a shard from TRIM_HORIZON until a call returns no records (an open shard's present end) or no
 * next iterator (a closed shard's end); returns the records and the last response.
 */
async function readShard(stream: string, shardId: string, stopAtEmpty = true) {
  let next: string | undefined = await iterator({ StreamName: stream, ShardId: shardId });
  const records: _Record[] = [];
  let last: GetRecordsCommandOutput | undefined;
  let calls = 0;
  while (next && calls++ < 50) {
    last = await kinesis.client.send(new GetRecordsCommand({ ShardIterator: next }));
    records.push(...(last.Records ?? []));
    if (stopAtEmpty && !last.Records?.length) break;
    next = last.NextShardIterator;
  }
  return { records, last, calls };
}

const text = (record: _Record) => Buffer.from(record.Data ?? new Uint8Array()).toString('utf8');

async function failure(
  promise: Promise<unknown>,
): Promise<Error & { $metadata?: { httpStatusCode?: number } }> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a failure');
}

describe('kinesalite through @aws-sdk/client-kinesis', () => {
  it('puts 100 records on a 2-shard stream and reads every one back from its shard, in order', async () => {
    await kinesis.createStream('orders', 2);
    const put = await kinesis.put(
      'orders',
      Array.from({ length: 100 }, (_, i) => ({ key: `key-${i}`, data: JSON.stringify({ i }) })),
    );
    expect(put).toHaveLength(100);
    // Sequence numbers: 56-digit decimal strings; within a shard they increase in put order (BigInt).
    for (const { sequenceNumber } of put) expect(sequenceNumber).toMatch(/^\d{56}$/);

    const seen = new Map<string, string>();
    for (const shardId of ['shardId-000000000000', 'shardId-000000000001']) {
      const { records, last } = await readShard('orders', shardId);
      expect(records.length).toBeGreaterThan(0);
      expect(last?.MillisBehindLatest).toBe(0);
      expect(last?.NextShardIterator).toEqual(expect.any(String));
      const mine = put.filter((p) => p.shardId === shardId).map((p) => p.sequenceNumber);
      expect(records.map((r) => r.SequenceNumber)).toEqual(mine);
      const asBig = mine.map((s) => BigInt(s));
      expect(asBig.every((s, i) => i === 0 || s > (asBig[i - 1] ?? s))).toBe(true);
      for (const record of records) {
        expect(record.ApproximateArrivalTimestamp).toBeInstanceOf(Date);
        expect(record.Data).toBeInstanceOf(Uint8Array);
        seen.set(record.PartitionKey ?? '', text(record));
      }
    }
    expect(seen.size).toBe(100);
    expect(seen.get('key-42')).toBe('{"i":42}');
  });

  it('splits and merges shards: children name their parents, parents close and end', async () => {
    await kinesis.createStream('reshard', 2);
    const before = await kinesis.put(
      'reshard',
      Array.from({ length: 40 }, (_, i) => ({ key: `before-${i}`, data: `b${i}` })),
    );
    const [left, right] = await kinesis.split('reshard', 'shardId-000000000000');
    expect([left, right]).toEqual(['shardId-000000000002', 'shardId-000000000003']);

    let shards = await kinesis.shards('reshard');
    const byId = (id: string) => shards.find((s) => s.ShardId === id);
    expect(byId(left)?.ParentShardId).toBe('shardId-000000000000');
    expect(byId(right)?.ParentShardId).toBe('shardId-000000000000');
    expect(byId(left)?.AdjacentParentShardId).toBeUndefined();
    expect(byId('shardId-000000000000')?.SequenceNumberRange?.EndingSequenceNumber).toMatch(/^\d{56}$/);
    expect(byId('shardId-000000000001')?.SequenceNumberRange?.EndingSequenceNumber).toBeUndefined();
    // The children split the parent's hash key range at its middle.
    expect(BigInt(byId(right)?.HashKeyRange?.StartingHashKey ?? '0')).toBe(
      BigInt(byId(left)?.HashKeyRange?.EndingHashKey ?? '0') + 1n,
    );

    // New records go to open shards only.
    const after = await kinesis.put(
      'reshard',
      Array.from({ length: 40 }, (_, i) => ({ key: `after-${i}`, data: `a${i}` })),
    );
    expect(new Set(after.map((p) => p.shardId)).has('shardId-000000000000')).toBe(false);

    // The closed parent: its records, then (within a couple of calls) no NextShardIterator at all.
    const parent = await readShard('reshard', 'shardId-000000000000', false);
    expect(parent.records.map((r) => r.SequenceNumber)).toEqual(
      before.filter((p) => p.shardId === 'shardId-000000000000').map((p) => p.sequenceNumber),
    );
    expect(parent.last?.NextShardIterator).toBeUndefined();
    expect(parent.last?.Records).toEqual([]);
    expect(parent.last?.ChildShards).toBeUndefined();
    expect(parent.last?.MillisBehindLatest).toEqual(expect.any(Number));
    expect(parent.calls).toBeLessThanOrEqual(3);

    const merged = await kinesis.merge('reshard', left, right);
    expect(merged).toBe('shardId-000000000004');
    shards = await kinesis.shards('reshard');
    expect(byId(merged)?.ParentShardId).toBe(left);
    expect(byId(merged)?.AdjacentParentShardId).toBe(right);
    expect(byId(merged)?.HashKeyRange).toEqual(byId('shardId-000000000000')?.HashKeyRange);
    for (const id of [left, right]) {
      expect(byId(id)?.SequenceNumberRange?.EndingSequenceNumber).toMatch(/^\d{56}$/);
      const closed = await readShard('reshard', id, false);
      expect(closed.last?.NextShardIterator).toBeUndefined();
      expect(closed.records.map((r) => r.SequenceNumber)).toEqual(
        after.filter((p) => p.shardId === id).map((p) => p.sequenceNumber),
      );
    }
    const { StreamDescriptionSummary } = await kinesis.client.send(
      new DescribeStreamSummaryCommand({ StreamName: 'reshard' }),
    );
    expect(StreamDescriptionSummary?.OpenShardCount).toBe(2);
  });

  it('throttles through the proxy: the SDK raises ProvisionedThroughputExceededException', async () => {
    await kinesis.createStream('throttled', 1);
    await kinesis.put('throttled', [{ key: 'a', data: 'one' }]);
    const proxy = await startThrottlingProxy(kinesis.endpoint, (target) => target.endsWith('.GetRecords'));
    const once = kinesisClient(proxy.endpoint, { maxAttempts: 1 });
    const twice = kinesisClient(proxy.endpoint, { maxAttempts: 2 });
    try {
      const start = await once.send(
        new GetShardIteratorCommand({
          StreamName: 'throttled',
          ShardId: 'shardId-000000000000',
          ShardIteratorType: 'TRIM_HORIZON',
        }),
      );
      const read = new GetRecordsCommand({ ShardIterator: start.ShardIterator });
      const error = await failure(once.send(read));
      expect(error.name).toBe('ProvisionedThroughputExceededException');
      expect(error.$metadata?.httpStatusCode).toBe(400);
      expect(error.message).toMatch(/^Rate exceeded for shard/);
      expect(proxy.throttled).toBe(1);

      // A throttling error to the SDK's retry strategy: retried up to maxAttempts.
      expect((await failure(twice.send(read))).name).toBe('ProvisionedThroughputExceededException');
      expect(proxy.throttled).toBe(3);

      proxy.setRule(() => false);
      const ok = await once.send(read);
      expect(ok.Records?.map(text)).toEqual(['one']);
      expect(proxy.throttled).toBe(3);
      expect(proxy.forwarded).toBe(2);
    } finally {
      once.destroy();
      twice.destroy();
      await proxy.stop();
    }
  });
});

describe('kinesalite facts a Kinesis connector relies on', () => {
  it('ListShards ignores MaxResults, ShardFilter and StreamARN; honours ExclusiveStartShardId', async () => {
    await kinesis.createStream('facts', 3);
    const all = await kinesis.client.send(new ListShardsCommand({ StreamName: 'facts', MaxResults: 1 }));
    expect(all.Shards).toHaveLength(3);
    expect(all.NextToken).toBeUndefined();
    const filtered = await kinesis.client.send(
      new ListShardsCommand({ StreamName: 'facts', ShardFilter: { Type: 'AT_LATEST' } }),
    );
    expect(filtered.Shards).toHaveLength(3);
    const rest = await kinesis.client.send(
      new ListShardsCommand({ StreamName: 'facts', ExclusiveStartShardId: 'shardId-000000000000' }),
    );
    expect(rest.Shards?.map((s) => s.ShardId)).toEqual(['shardId-000000000001', 'shardId-000000000002']);
    const byArn = await failure(
      kinesis.client.send(
        new ListShardsCommand({ StreamARN: 'arn:aws:kinesis:us-east-1:000000000000:stream/facts' }),
      ),
    );
    expect(byArn.name).toBe('InvalidArgumentException');
    // (ListShards with only a NextToken throws inside kinesalite and kills this process: not sent here.)

    const described = await kinesis.client.send(new DescribeStreamCommand({ StreamName: 'facts', Limit: 1 }));
    expect(described.StreamDescription?.Shards).toHaveLength(3);
    expect(described.StreamDescription?.HasMoreShards).toBe(false);
    expect(described.StreamDescription?.StreamARN).toBe(
      'arn:aws:kinesis:us-east-1:000000000000:stream/facts',
    );
  });

  it('has no UpdateShardCount and no enhanced fan-out', async () => {
    const arn = 'arn:aws:kinesis:us-east-1:000000000000:stream/facts';
    for (const command of [
      new UpdateShardCountCommand({
        StreamName: 'facts',
        TargetShardCount: 6,
        ScalingType: 'UNIFORM_SCALING',
      }),
      new RegisterStreamConsumerCommand({ StreamARN: arn, ConsumerName: 'sluice' }),
      new SubscribeToShardCommand({
        ConsumerARN: `${arn}/consumer/sluice:1`,
        ShardId: 'shardId-000000000000',
        StartingPosition: { Type: 'LATEST' },
      }),
    ]) {
      const error = await failure(kinesis.client.send(command as any));
      expect(error.name).toBe('UnknownOperationException');
      expect(error.$metadata?.httpStatusCode).toBe(400);
    }
  });

  it('positions iterators AT/AFTER_SEQUENCE_NUMBER and AT_TIMESTAMP', async () => {
    await kinesis.createStream('positions', 1);
    const shard = { StreamName: 'positions', ShardId: 'shardId-000000000000' };
    const firstTime = new Date();
    const put = await kinesis.put(
      'positions',
      Array.from({ length: 5 }, (_, i) => ({ key: `k${i}`, data: `d${i}` })),
    );
    const read = async (it: string) =>
      (await kinesis.client.send(new GetRecordsCommand({ ShardIterator: it }))).Records ?? [];
    const sequence = put[2]?.sequenceNumber;
    const at = await read(
      await iterator({ ...shard, ShardIteratorType: 'AT_SEQUENCE_NUMBER', StartingSequenceNumber: sequence }),
    );
    expect(at.map(text)).toEqual(['d2', 'd3', 'd4']);
    const after = await read(
      await iterator({
        ...shard,
        ShardIteratorType: 'AFTER_SEQUENCE_NUMBER',
        StartingSequenceNumber: sequence,
      }),
    );
    expect(after.map(text)).toEqual(['d3', 'd4']);
    const latest = await read(await iterator({ ...shard, ShardIteratorType: 'LATEST' }));
    expect(latest).toEqual([]);

    const fromTime = await read(
      await iterator({
        ...shard,
        ShardIteratorType: 'AT_TIMESTAMP',
        Timestamp: new Date(firstTime.getTime() - 1),
      }),
    );
    expect(fromTime.map(text)).toEqual(['d0', 'd1', 'd2', 'd3', 'd4']);
    // Arrival timestamps keep milliseconds.
    const arrived = fromTime[0]?.ApproximateArrivalTimestamp?.getTime() ?? 0;
    expect(Math.abs(arrived - firstTime.getTime())).toBeLessThan(1000);

    const future = await failure(
      iterator({ ...shard, ShardIteratorType: 'AT_TIMESTAMP', Timestamp: new Date(Date.now() + 60_000) }),
    );
    expect(future.name).toBe('InvalidArgumentException');
    const wrongShard = await failure(
      iterator({
        StreamName: 'orders',
        ShardId: 'shardId-000000000001',
        ShardIteratorType: 'AT_SEQUENCE_NUMBER',
        StartingSequenceNumber: sequence,
      }),
    );
    expect(wrongShard.name).toBe('InvalidArgumentException');

    // AT_TIMESTAMP later than every record on the shard: kinesalite never answers. And in this
    // @smithy/node-http-handler a requestTimeout alone only logs a warning: the call stays pending.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const pastEveryRecord = () =>
      new GetShardIteratorCommand({
        ...shard,
        ShardIteratorType: 'AT_TIMESTAMP',
        Timestamp: new Date(Date.now() - 5),
      });
    const warnOnly = kinesisClient(kinesis.endpoint, {
      maxAttempts: 1,
      requestHandler: new NodeHttpHandler({ requestTimeout: 100 }),
      logger: { debug() {}, info() {}, warn() {}, error() {} },
    });
    const throwing = kinesisClient(kinesis.endpoint, {
      maxAttempts: 1,
      requestHandler: new NodeHttpHandler({ requestTimeout: 300, throwOnRequestTimeout: true }),
    });
    try {
      const pending = warnOnly.send(pastEveryRecord()).then(
        () => 'answered',
        (error: Error) => error.name,
      );
      const outcome = await Promise.race([
        pending,
        new Promise((r) => setTimeout(() => r('still pending'), 600)),
      ]);
      expect(outcome).toBe('still pending');
      const hang = await failure(throwing.send(pastEveryRecord()));
      expect(hang.name).toBe('TimeoutError');
    } finally {
      warnOnly.destroy();
      throwing.destroy();
    }
  });

  it('expires iterators after 5 minutes and enforces GetRecords Limit <= 10000', async () => {
    const it = await iterator({ StreamName: 'orders', ShardId: 'shardId-000000000000' });
    const tooMany = await failure(
      kinesis.client.send(new GetRecordsCommand({ ShardIterator: it, Limit: 10_001 })),
    );
    expect(tooMany.name).toBe('ValidationException');
    const now = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(now + 300_001);
    try {
      const expired = await failure(kinesis.client.send(new GetRecordsCommand({ ShardIterator: it })));
      expect(expired.name).toBe('ExpiredIteratorException');
    } finally {
      vi.restoreAllMocks();
    }
    const bad = await failure(kinesis.client.send(new GetRecordsCommand({ ShardIterator: 'AAAAAAAAAAE=' })));
    expect(bad.name).toBe('InvalidArgumentException');
  });

  it('answers ResourceNotFoundException for a missing stream and never checks credentials', async () => {
    const missing = await failure(
      kinesis.client.send(new DescribeStreamSummaryCommand({ StreamName: 'no-such-stream' })),
    );
    expect(missing.name).toBe('ResourceNotFoundException');
    expect(missing.message).toBe('Stream no-such-stream under account 000000000000 not found.');
    const missingRead = await failure(
      iterator({ StreamName: 'no-such-stream', ShardId: 'shardId-000000000000' }),
    );
    expect(missingRead.name).toBe('ResourceNotFoundException');

    const stranger = kinesisClient(kinesis.endpoint, {
      credentials: { accessKeyId: 'AKIAWRONG', secretAccessKey: 'wrong' },
    });
    try {
      const { StreamNames } = await stranger.send(new ListStreamsCommand({}));
      expect(StreamNames).toContain('orders');
    } finally {
      stranger.destroy();
    }
  });

  it('is reached through AWS_ENDPOINT_URL_KINESIS, and not with the default HTTP/2 handler', async () => {
    const saved = process.env.AWS_ENDPOINT_URL_KINESIS;
    process.env.AWS_ENDPOINT_URL_KINESIS = kinesis.environment().AWS_ENDPOINT_URL_KINESIS;
    const fromEnvironment = new KinesisClient({
      region: kinesis.region,
      credentials: kinesis.credentials,
      requestHandler: new NodeHttpHandler(),
      maxAttempts: 1,
    });
    try {
      const { StreamNames } = await fromEnvironment.send(new ListStreamsCommand({}));
      expect(StreamNames).toContain('orders');
    } finally {
      fromEnvironment.destroy();
      if (saved === undefined) delete process.env.AWS_ENDPOINT_URL_KINESIS;
      else process.env.AWS_ENDPOINT_URL_KINESIS = saved;
    }

    const http2 = new KinesisClient({
      endpoint: kinesis.endpoint,
      region: kinesis.region,
      credentials: kinesis.credentials,
      maxAttempts: 1,
    });
    try {
      const error = await failure(http2.send(new ListStreamsCommand({})));
      expect(error.message).toMatch(/Protocol error/);
    } finally {
      http2.destroy();
    }
  });
});
