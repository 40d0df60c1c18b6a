import { describe, expect, it } from 'vitest';
import {
  type RunningKinesis,
  startKinesis,
  startThrottlingProxy,
  type ThrottlingProxy,
} from './support/kinesis.js';
import {
  claimedToLastPut,
  ids,
  KINESIS_VIRTUAL_COLUMNS,
  kinesisBody,
  latestReadsOnlyNew,
  range,
  records,
  splitAndMerge,
  useKinesisAndSluice,
  waitForRows,
} from './support/kinesis-pipes.js';
import { createPipe, sql, statusOf, waitForCommittedToEnd, waitForState } from './support/runtime.js';
import type { TestSluice } from './support/sluice.js';
import { waitFor } from './support/wait.js';

// Kinesis pipes against kinesalite (test/support/kinesis.ts), with Sluice run as a user runs it:
// runtime and timers on, the endpoint given the AWS SDK's own way (AWS_ENDPOINT_URL_KINESIS),
// everything seen through the API. Sluice reaches kinesalite through the test's own proxy, which
// passes every request on unless a test tells it to throttle (kinesalite never throttles).

let kinesis: RunningKinesis;
let proxy: ThrottlingProxy;
let s: TestSluice;

useKinesisAndSluice(
  () => startKinesis({ shardLimit: 50 }),
  (upstream) => startThrottlingProxy(upstream, () => false),
  (started) => {
    ({ kinesis, proxy, s } = started);
  },
);

describe('a Kinesis pipe', () => {
  it('reads every record of several shards with every virtual column, and sets aside 1% malformed', async () => {
    const stream = 'virtual';
    await kinesis.createStream(stream, 3);
    const COUNT = 3000;
    const isBad = (i: number) => i % 100 === 42;
    const sent = records(0, COUNT).map((record, i) =>
      isBad(i)
        ? {
            ...record,
            data:
              i % 200 === 42
                ? `{"id": "not a number", "name": "bad ${i}"}`
                : `{"id": ${i}, "name": "unterminated`,
          }
        : record,
    );
    const put = await kinesis.put(stream, sent);
    const id = await createPipe(
      s,
      kinesisBody(
        stream,
        { streamName: stream },
        {
          validateSamples: true,
          columns: Object.entries(KINESIS_VIRTUAL_COLUMNS).map(([name, type]) => ({
            name: `v${name}`,
            type,
          })),
          mappings: Object.fromEntries(
            Object.keys(KINESIS_VIRTUAL_COLUMNS).map((name) => [`v${name}`, name]),
          ),
        },
      ),
    );
    await waitForState(s, id, 'Running');
    const good = COUNT - sent.filter((_, i) => isBad(i)).length;
    await waitForRows(s, stream, good);
    const [row] = await sql(
      s,
      `SELECT id, name, v_key, toUnixTimestamp64Milli(v_timestamp) AS ts, v_stream, v_shard_id,
              v_sequence_number, v_raw_message FROM kinesis.virtual WHERE id = 7`,
    );
    expect(row).toMatchObject({
      id: 7,
      name: 'n7',
      v_key: 'k7',
      v_stream: stream,
      v_shard_id: put[7]?.shardId,
      v_sequence_number: put[7]?.sequenceNumber,
      v_raw_message: '{"id":7,"name":"n7"}',
    });
    // Arrival time as Kinesis stamped it: within the test's run.
    expect(Math.abs(Number(row?.ts) - Date.now())).toBeLessThan(120_000);
    expect(await ids(s, stream)).toEqual(range(0, COUNT).filter((i) => !isBad(i)));

    const errors = await sql(s, `SELECT source, error, raw FROM kinesis.virtual_pipes_error`);
    const bad = range(0, COUNT).filter(isBad);
    expect(errors).toHaveLength(bad.length);
    for (const i of bad) {
      expect(errors).toContainEqual(
        expect.objectContaining({
          source: `${stream}:${put[i]?.shardId}:${put[i]?.sequenceNumber}`,
          raw: sent[i]?.data,
        }),
      );
    }
    expect(errors.every((e) => String(e.error).length > 0)).toBe(true);

    // Per shard: its last committed sequence number, how far behind, and its rate.
    const status = await waitFor('every shard committed to its end', async () => {
      const status = await statusOf(s, id);
      return status.shards?.every((shard: { lastCommittedSequenceNumber: string | null }) =>
        put.some((p) => p.sequenceNumber === shard.lastCommittedSequenceNumber),
      )
        ? status
        : undefined;
    });
    expect(status).toMatchObject({ state: 'Running', rowsWritten: good, badRecords: bad.length });
    const lastOf = (shard: string) => put.filter((p) => p.shardId === shard).at(-1)?.sequenceNumber;
    expect(status.shards).toHaveLength(3);
    for (const shard of status.shards) {
      expect(shard).toMatchObject({
        state: 'reading',
        replica: 0,
        parents: [],
        lastCommittedSequenceNumber: lastOf(shard.shardId),
        millisBehindLatest: expect.any(Number),
      });
      expect(shard.recordsPerSecond).toBeGreaterThan(0);
    }
    const metrics = (await s.request({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(
      new RegExp(
        `sluice_pipe_shard_millis_behind_latest\\{pipe_id="${id}",shard_id="shardId-000000000000"\\} \\d+`,
      ),
    );
  });

  it('LATEST reads only what arrives once the pipe runs', async () => {
    await latestReadsOnlyNew(s, kinesis, 'latest', {});
  });

  it('AT_TIMESTAMP reads what arrived from that second on', async () => {
    const stream = 'timestamp';
    await kinesis.createStream(stream, 2);
    await kinesis.put(stream, records(0, 50));
    // Timestamps are whole seconds: the next second starts after every record before it.
    const second = Math.ceil((Date.now() + 1) / 1000);
    await new Promise((resolve) => setTimeout(resolve, second * 1000 - Date.now() + 50));
    await kinesis.put(stream, records(50, 50));
    const id = await createPipe(
      s,
      kinesisBody(stream, { streamName: stream, iteratorType: 'AT_TIMESTAMP', timestamp: second }),
    );
    await waitForState(s, id, 'Running');
    await waitForRows(s, stream, 50);
    await kinesis.put(stream, records(100, 10));
    await waitForRows(s, stream, 60);
    expect(await ids(s, stream)).toEqual(range(50, 60));
  });

  it('follows a split and a merge, children after their parents: per key, records land in order', async () => {
    await splitAndMerge(s, kinesis, 'resharded', {});
  });

  it('two replicas share the shards, each shard read by one, every record once', async () => {
    const stream = 'shared';
    await kinesis.createStream(stream, 4);
    await kinesis.put(stream, records(0, 2000));
    const id = await createPipe(s, kinesisBody(stream, { streamName: stream }, { replicas: 2 }));
    await waitForState(s, id, 'Running');
    await kinesis.put(stream, records(2000, 2000));
    await waitForRows(s, stream, 4000);
    expect(await ids(s, stream)).toEqual(range(0, 4000));
    const { shards } = await statusOf(s, id);
    const replicas = shards.map((shard: { replica: number }) => shard.replica).sort();
    expect(replicas).toEqual([0, 0, 1, 1]);
  });

  it('throttled reads: Degraded with the reason while it cannot read, then Running, nothing lost', async () => {
    const stream = 'throttled';
    await kinesis.createStream(stream, 1);
    await kinesis.put(stream, records(0, 100));
    const id = await createPipe(s, kinesisBody(stream, { streamName: stream }));
    await waitForRows(s, stream, 100);
    proxy.setRule((target) => target.endsWith('.GetRecords'));
    const before = proxy.throttled;
    await kinesis.put(stream, records(100, 100));
    const degraded = await waitForState(s, id, 'Degraded', 30_000);
    expect(degraded.reason).toMatch(/ProvisionedThroughputExceededException/);
    expect(degraded.lastErrorCode).toBe('SLUICE_ERR_SOURCE');
    expect(proxy.throttled).toBeGreaterThan(before);
    proxy.setRule(() => false);
    await waitForState(s, id, 'Running', 60_000);
    await waitForRows(s, stream, 200);
    expect(await ids(s, stream)).toEqual(range(0, 200));
  });

  it('an expired iterator is made again after the last record read: nothing lost or doubled', async () => {
    const stream = 'expiring';
    // The proxy cannot tell streams apart in GetRecords (an iterator is opaque): this pipe reads alone.
    for (const pipe of (await s.request({ method: 'GET', url: s.pipesUrl })).json.result) {
      const deleted = await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${pipe.id}` });
      expect(deleted.statusCode).toBe(200);
    }
    await kinesis.createStream(stream, 1);
    const puts = await kinesis.put(stream, records(0, 100));
    const id = await createPipe(s, kinesisBody(stream, { streamName: stream }));
    await waitForRows(s, stream, 100);
    // The next read is refused as Kinesis refuses an iterator older than five minutes.
    let expired = 0;
    const iterators: string[] = [];
    proxy.setRule((target, body) => {
      if (target.endsWith('.GetShardIterator') && body.StreamName === stream)
        iterators.push(String(body.ShardIteratorType));
      if (!target.endsWith('.GetRecords') || expired > 0) return false;
      expired += 1;
      return 'ExpiredIteratorException';
    });
    try {
      puts.push(...(await kinesis.put(stream, records(100, 100))));
      await waitForRows(s, stream, 200);
    } finally {
      proxy.setRule(() => false);
    }
    expect(expired).toBe(1);
    expect(iterators).toEqual(['AFTER_SEQUENCE_NUMBER']);
    // Committed up to the last record: a record read again would be in the table now.
    await waitForCommittedToEnd(s, id, claimedToLastPut(puts));
    expect(await ids(s, stream)).toEqual(range(0, 200));
    expect((await statusOf(s, id)).state).toBe('Running');
  });

  it('create checks: a missing stream, enhanced fan-out and AvroConfluent are 400s naming the field', async () => {
    const missing = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: kinesisBody('nowhere', { streamName: 'no-such-stream' }),
    });
    expect(missing.statusCode).toBe(400);
    expect(missing.json.error).toContain('source.kinesis.streamName: no stream no-such-stream in us-east-1');
    expect(missing.json.code).toBe('SLUICE_ERR_VALIDATION');

    await kinesis.createStream('checked', 1);
    const fanOut = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: kinesisBody('fan', { streamName: 'checked', useEnhancedFanOut: true }),
    });
    expect(fanOut.statusCode).toBe(400);
    expect(fanOut.json.error).toContain(
      'source.kinesis.useEnhancedFanOut: this Kinesis server does not support enhanced fan-out',
    );
    expect(fanOut.json.code).toBe('SLUICE_ERR_VALIDATION');

    const avro = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: kinesisBody('avro', { streamName: 'checked', format: 'AvroConfluent' }),
    });
    expect(avro.statusCode).toBe(400);
    expect(avro.json.error).toContain('source.kinesis.format: AvroConfluent is not supported yet');
    expect(avro.json.code).toBe('SLUICE_ERR_VALIDATION');

    await kinesis.put('checked', [{ key: 'a', data: '{"id": "x", "name": 1}' }]);
    const samples = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: kinesisBody('samples', { streamName: 'checked' }, { validateSamples: true }),
    });
    expect(samples.statusCode).toBe(400);
    expect(samples.json.error).toMatch(
      /source\.validateSamples: checked shard shardId-000000000000 sequence number \d+: /,
    );
    expect(samples.json.code).toBe('SLUICE_ERR_VALIDATION');
    const names = (await s.request({ method: 'GET', url: s.pipesUrl })).json.result.map(
      (pipe: { name: string }) => pipe.name,
    );
    expect(names).not.toEqual(expect.arrayContaining(['nowhere', 'fan', 'avro', 'samples']));
  });
});
