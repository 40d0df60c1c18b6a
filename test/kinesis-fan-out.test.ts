import { describe, expect, it } from 'vitest';
import { type RunningKinesisLocal, startKinesisLocal } from './support/kinesis-local.js';
import {
  ids,
  kinesisBody,
  latestReadsOnlyNew,
  range,
  records,
  splitAndMerge,
  useKinesisAndSluice,
  waitForRows,
} from './support/kinesis-pipes.js';
import { createPipe, statusOf, waitForState } from './support/runtime.js';
import type { TestSluice } from './support/sluice.js';
import { startTcpTap, type TcpTap } from './support/tcp-tap.js';
import { waitFor } from './support/wait.js';

// Enhanced fan-out against kinesis-local (test/support/kinesis-local.ts), which serves
// RegisterStreamConsumer and SubscribeToShard over HTTP/2 as AWS does; kinesalite does not (the
// 400 for it is in kinesis-pipes.test.ts). Sluice reaches the server through a TCP tap that
// notes every HTTP/1.1 call: a pipe that read with GetRecords instead would show there.

let kinesis: RunningKinesisLocal;
let tap: TcpTap;
let s: TestSluice;

useKinesisAndSluice(startKinesisLocal, startTcpTap, (started) => {
  ({ kinesis, proxy: tap, s } = started);
});

const fanOut = { useEnhancedFanOut: true };

describe('a Kinesis pipe with enhanced fan-out', () => {
  it("reads every shard by SubscribeToShard as the pipe's own consumer, never GetRecords; delete deregisters it", async () => {
    const stream = 'pushed';
    await kinesis.createStream(stream, 3);
    await kinesis.put(stream, records(0, 1500));
    const calls = tap.http1Calls.length;
    const id = await createPipe(s, kinesisBody(stream, { streamName: stream, ...fanOut }));
    await waitForState(s, id, 'Running');
    await waitForRows(s, stream, 1500);
    await kinesis.put(stream, records(1500, 1500));
    await waitForRows(s, stream, 3000);
    expect(await ids(s, stream)).toEqual(range(0, 3000));

    const consumers = await kinesis.consumers(stream);
    expect(consumers.map((c) => [c.ConsumerName, c.ConsumerStatus])).toEqual([[`pipes-${id}`, 'ACTIVE']]);
    const used = tap.http1Calls.slice(calls);
    expect(used).toContain('RegisterStreamConsumer');
    expect(used).not.toContain('GetRecords');
    // The create checks' one, to see the stream reads with these keys; a reader polling the
    // three shards would take one per shard.
    expect(used.filter((call) => call === 'GetShardIterator')).toHaveLength(1);
    expect(tap.http2Connections).toBeGreaterThan(0);
    const status = await statusOf(s, id);
    expect(status.shards).toHaveLength(3);
    for (const shard of status.shards) {
      expect(shard).toMatchObject({ state: 'reading', millisBehindLatest: 0 });
      expect(shard.lastCommittedSequenceNumber).toMatch(/^\d+$/);
    }

    const deleted = await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${id}` });
    expect(deleted.statusCode, deleted.body).toBe(200);
    await waitFor('the consumer deregistered', async () =>
      (await kinesis.consumers(stream)).length === 0 ? true : undefined,
    );
  });

  it('stop and start: the next subscription starts after the last committed record, nothing lost or doubled', async () => {
    const stream = 'resumed';
    await kinesis.createStream(stream, 2);
    await kinesis.put(stream, records(0, 500));
    const id = await createPipe(s, kinesisBody(stream, { streamName: stream, ...fanOut }));
    await waitForRows(s, stream, 500);
    await setState(id, 'stop');
    await waitForState(s, id, 'Stopped');
    await kinesis.put(stream, records(500, 500));
    await setState(id, 'start');
    await waitForRows(s, stream, 1000);
    await kinesis.put(stream, records(1000, 10));
    await waitForRows(s, stream, 1010);
    expect(await ids(s, stream)).toEqual(range(0, 1010));
    // One consumer for the pipe across runs: the second run found the first one's.
    expect((await kinesis.consumers(stream)).map((c) => c.ConsumerName)).toEqual([`pipes-${id}`]);
  });

  it('LATEST subscribes at the tip: only what arrives once the pipe runs', async () => {
    await latestReadsOnlyNew(s, kinesis, 'tip', fanOut);
  });

  it('follows a split and a merge, children after their parents: per key, records land in order', async () => {
    await splitAndMerge(s, kinesis, 'pushed_resharded', fanOut);
  }, 180_000);
});

async function setState(id: string, command: 'stop' | 'start') {
  const answer = await s.request({ method: 'PATCH', url: `${s.pipesUrl}/${id}/state`, body: { command } });
  expect(answer.statusCode, answer.body).toBe(200);
}
