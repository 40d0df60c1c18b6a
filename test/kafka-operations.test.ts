import { Admin, Consumer } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningKafka, startKafka } from './support/kafka.js';
import { claimedToLogEnd, kafkaPipe, produce, type TestMessage } from './support/kafka-pipes.js';
import { createPipe, sql, statusOf, waitForCommittedToEnd, waitForState } from './support/runtime.js';
import { startSluice, type TestSluice } from './support/sluice.js';
import { waitFor } from './support/wait.js';

// Kafka pipes as an operator lives with them, on a real broker: where they start, rebalances,
// a broker that goes away, stop, start and delete mid-stream, and offsets for lag tools.

let kafka: RunningKafka;
let s: TestSluice;

beforeAll(async () => {
  kafka = await startKafka();
  s = await startSluice({ runtime: true, env: { SLUICE_ALLOW_PLAINTEXT_KAFKA: 'true' } });
}, 600_000);

afterAll(async () => {
  await s?.close();
  await kafka?.stop();
});

const brokers = () => `plaintext://${kafka.bootstrap.plaintext}`;
const rows = (topic: string, from: number, count: number, extra: Partial<TestMessage> = {}) =>
  Array.from({ length: count }, (_, i) => ({
    topic,
    value: JSON.stringify({ id: from + i, name: `n${from + i}` }),
    ...extra,
  }));

async function totals(table: string) {
  const [row] = await sql(s, `SELECT count() AS n, uniqExact(id) AS ids FROM kafka.${table}`);
  return { n: Number(row?.n), ids: Number(row?.ids) };
}

function waitForCount(table: string, n: number, timeoutMs = 90_000) {
  return waitFor(
    `${n} rows in kafka.${table}`,
    async () => ((await totals(table)).n >= n ? true : undefined),
    timeoutMs,
    200,
  );
}

const settings = { streaming_max_insert_wait_ms: 500 };

/** The pipe's status once it has `partitions` partitions, every one at lag 0. */
function caughtUp(pipeId: string, partitions: number) {
  return waitFor(`${partitions} partitions at lag 0`, async () => {
    const status = await statusOf(s, pipeId);
    const all = status.partitions?.length === partitions;
    return all && status.partitions.every((p: { lag: number }) => p.lag === 0) ? status : undefined;
  });
}

/** The pipe committed all of its `partitions` partitions up to their log end: nothing more is to come. */
function committedToEnd(pipeId: string, partitions: number) {
  return waitForCommittedToEnd(s, pipeId, claimedToLogEnd(partitions), 90_000);
}

describe('where a Kafka pipe starts', () => {
  it('from_latest skips what was there before; from_timestamp starts at the first message at or after the time', async () => {
    await kafka.createTopic('latest', 2);
    await produce(kafka.connection('plaintext'), rows('latest', 0, 100));
    const latest = await createPipe(s, {
      ...kafkaPipe('latest', { brokers: brokers(), topics: 'latest', offset: { strategy: 'from_latest' } }),
      settings,
    });
    await waitFor(
      'the pipe to have its partitions',
      async () => (await statusOf(s, latest)).partitions?.length === 2 || undefined,
    );
    await produce(kafka.connection('plaintext'), rows('latest', 100, 50));
    await waitForCount('latest', 50);

    await kafka.createTopic('from-time', 1);
    const at = Date.parse('2026-01-02T03:04:00Z');
    await produce(kafka.connection('plaintext'), [
      ...rows('from-time', 0, 30, { timestamp: BigInt(at - 60_000) }),
      ...rows('from-time', 30, 20, { timestamp: BigInt(at) }),
      ...rows('from-time', 50, 10, { timestamp: BigInt(at + 60_000) }),
    ]);
    const fromTime = await createPipe(s, {
      ...kafkaPipe('from_time', {
        brokers: brokers(),
        topics: 'from-time',
        offset: { strategy: 'from_timestamp', timestamp: '2026-01-02T03:04' },
      }),
      settings,
    });
    await waitForCount('from_time', 30);
    await committedToEnd(latest, 2);
    await committedToEnd(fromTime, 1);
    expect(await totals('latest')).toEqual({ n: 50, ids: 50 });
    expect(await sql(s, 'SELECT min(id) AS lo, max(id) AS hi FROM kafka.latest')).toEqual([
      { lo: 100, hi: 149 },
    ]);
    expect(await sql(s, 'SELECT count() AS n, min(id) AS lo FROM kafka.from_time')).toEqual([
      { n: 30, lo: 30 },
    ]);
  });

  it('validateSamples: the first messages must parse as mapped, or the create is a 400 naming the message', async () => {
    await kafka.createTopic('samples', 1);
    await produce(kafka.connection('plaintext'), [
      ...rows('samples', 0, 2),
      { topic: 'samples', value: '{"id": "three", "name": "c"}' },
    ]);
    const body = kafkaPipe('samples', { brokers: brokers(), topics: 'samples' });
    const response = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: { ...body, source: { ...body.source, validateSamples: true } },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json.error).toContain('source.validateSamples');
    expect(response.json.error).toContain('samples partition 0 offset 2');
    expect(response.json.code).toBe('SLUICE_ERR_VALIDATION');
    expect(
      (await s.request({ method: 'GET', url: s.pipesUrl })).json.result.map((p: { name: string }) => p.name),
    ).not.toContain('samples');
  });
});

describe('a Kafka pipe while it runs', () => {
  it('two replicas share the partitions; members joining and leaving the group mid-stream lose and double nothing', async () => {
    const topic = 'rebalance';
    await kafka.createTopic(topic, 4);
    const id = await createPipe(s, {
      ...kafkaPipe('rebalance', { brokers: brokers(), topics: topic, consumerGroup: 'rebalance-group' }),
      scaling: { replicas: 2 },
      settings,
    });
    await waitForState(s, id, 'Running');
    await produce(kafka.connection('plaintext'), rows(topic, 0, 2000));
    await waitForCount('rebalance', 1);
    // Another member joins the pipe's group (a second node would): the group rebalances and takes
    // partitions from the pipe's members; then it leaves and they come back.
    const intruder = new Consumer({
      clientId: 'intruder',
      groupId: 'rebalance-group',
      ...kafka.connection('plaintext'),
      sessionTimeout: 6_000,
      heartbeatInterval: 500,
    });
    intruder.topics.trackAll(topic);
    await intruder.joinGroup({});
    const taken = (intruder.assignments ?? []).flatMap((a) => a.partitions);
    await produce(kafka.connection('plaintext'), rows(topic, 2000, 2000));
    await intruder.close();
    // The pipe's replicas scale from 2 to 3 mid-stream: another rebalance.
    const scaled = await s.request({
      method: 'PATCH',
      url: `${s.pipesUrl}/${id}/scaling`,
      body: { replicas: 3 },
    });
    expect(scaled.statusCode).toBe(200);
    await produce(kafka.connection('plaintext'), rows(topic, 4000, 2000));
    await waitForCount('rebalance', 6000);
    await committedToEnd(id, 4);
    expect(taken.length).toBeGreaterThan(0);
    expect(await totals('rebalance')).toEqual({ n: 6000, ids: 6000 });
    const status = await caughtUp(id, 4);
    expect(
      status.partitions
        .map((p: { highWatermark: number }) => p.highWatermark)
        .reduce((a: number, b: number) => a + b, 0),
    ).toBe(6000);
    // The group's committed offsets follow the store (for lag tools), after each batch.
    const reader = new Consumer({
      clientId: 'lag-tool',
      groupId: 'rebalance-group',
      ...kafka.connection('plaintext'),
    });
    try {
      const committed = await waitFor('offsets committed to the group', async () => {
        const offsets = await reader.listCommittedOffsets({ topics: [{ topic, partitions: [0, 1, 2, 3] }] });
        const list = offsets.get(topic) ?? [];
        return list.reduce((a, b) => a + b, 0n) === 6000n ? list : undefined;
      });
      expect(committed).toEqual(
        status.partitions.map((p: { highWatermark: number }) => BigInt(p.highWatermark)),
      );
    } finally {
      await reader.close();
    }
  });

  it('partitions added to a topic mid-stream are found and read from their start (even from_latest), by two replicas', async () => {
    const topic = 'growing';
    await kafka.createTopic(topic, 2);
    const id = await createPipe(s, {
      ...kafkaPipe('growing', { brokers: brokers(), topics: topic, offset: { strategy: 'from_latest' } }),
      scaling: { replicas: 2 },
      settings,
    });
    await waitFor(
      'the pipe to have its partitions',
      async () => (await statusOf(s, id)).partitions?.length === 2 || undefined,
    );
    await produce(kafka.connection('plaintext'), rows(topic, 0, 200));
    await waitForCount('growing', 200);
    await kafka.addPartitions(topic, 4);
    // Written to the new partitions only, before the pipe can know of them: nothing of it lands
    // unless the pipe finds them, and reads them from their start despite from_latest.
    await produce(kafka.connection('plaintext'), [
      ...rows(topic, 200, 100, { partition: 2 }),
      ...rows(topic, 300, 100, { partition: 3 }),
    ]);
    await waitForCount('growing', 400);
    const status = await caughtUp(id, 4);
    expect(status.partitions.map((p: { partition: number }) => p.partition).sort()).toEqual([0, 1, 2, 3]);
    expect(await totals('growing')).toEqual({ n: 400, ids: 400 });
  }, 120_000);

  it('a broker that goes away makes the pipe Degraded with the reason; when it is back the pipe runs and nothing is lost', async () => {
    const topic = 'outage';
    await kafka.createTopic(topic, 2);
    const id = await createPipe(s, {
      ...kafkaPipe('outage', { brokers: brokers(), topics: topic }),
      settings,
    });
    await produce(kafka.connection('plaintext'), rows(topic, 0, 1000));
    await waitForCount('outage', 1000);
    await kafka.shutdown();
    const degraded = await waitForState(s, id, 'Degraded', 120_000);
    expect(degraded.lastErrorCode).toBe('SLUICE_ERR_SOURCE_UNREACHABLE');
    await kafka.start();
    await waitForState(s, id, 'Running', 120_000);
    await produce(kafka.connection('plaintext'), rows(topic, 1000, 1000));
    await waitForCount('outage', 2000, 120_000);
    await committedToEnd(id, 2);
    expect(await totals('outage')).toEqual({ n: 2000, ids: 2000 });
  }, 300_000);

  it('a topic made again under a stopped pipe: the pipe reads the new log from its start and says so', async () => {
    const topic = 'remade';
    await kafka.createTopic(topic, 1);
    const id = await createPipe(s, {
      ...kafkaPipe('remade', { brokers: brokers(), topics: topic }),
      settings,
    });
    await produce(kafka.connection('plaintext'), rows(topic, 0, 100));
    await waitForCount('remade', 100);
    const url = `${s.pipesUrl}/${id}/state`;
    await s.request({ method: 'PATCH', url, body: { command: 'stop' } });
    const admin = new Admin({ clientId: 'remake', ...kafka.connection('plaintext') });
    try {
      await admin.deleteTopics({ topics: [topic] });
    } finally {
      await admin.close();
    }
    // Deletion completes in the background: the topic can be made again once it is gone.
    await waitFor(
      'the topic to be made again',
      async () => kafka.createTopic(topic, 1).then(() => true),
      60_000,
      500,
    );
    await produce(kafka.connection('plaintext'), rows(topic, 1000, 30));
    await s.request({ method: 'PATCH', url, body: { command: 'start' } });
    await waitForCount('remade', 130);
    await committedToEnd(id, 1);
    expect(await totals('remade')).toEqual({ n: 130, ids: 130 });
    const status = await statusOf(s, id);
    expect(status.state).toBe('Running');
    expect(status.lastError).toMatch(/remade partition 0 ends at 30, before the pipe's position 100/);
    expect(status.lastErrorCode).toBe('SLUICE_ERR_SOURCE_DATA_EXPIRED');
  }, 120_000);

  it('stop mid-stream stops ingesting, start resumes exactly where it was; delete mid-stream removes it cleanly', async () => {
    const topic = 'stop-start';
    await kafka.createTopic(topic, 3);
    const id = await createPipe(s, {
      ...kafkaPipe('stop_start', { brokers: brokers(), topics: topic }),
      settings,
    });
    const producing = (async () => {
      for (let round = 0; round < 20; round += 1) {
        await produce(kafka.connection('plaintext'), rows(topic, round * 200, 200));
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    await waitForCount('stop_start', 200);
    // A running pipe says how fast it goes (the last minute); a stopped one says nothing of it.
    // Rows are visible once moved, a moment before their batch is committed and counted.
    const running = await waitFor('the running pipe to report its rate', async () => {
      const status = await statusOf(s, id);
      return status.rowsPerSecond > 0 ? status : undefined;
    });
    expect(running.rowsPerSecond).toBeGreaterThan(0);
    expect(running.bytesPerSecond).toBeGreaterThan(running.rowsPerSecond);
    const url = `${s.pipesUrl}/${id}/state`;
    expect((await s.request({ method: 'PATCH', url, body: { command: 'stop' } })).json.result.state).toBe(
      'Stopped',
    );
    expect(await statusOf(s, id)).not.toHaveProperty('rowsPerSecond');
    const atStop = (await totals('stop_start')).n;
    await producing;
    // A pipe that runs, on the same topic, commits all 4000 messages up to the log end: a stopped
    // pipe still reading (it only lacked the rest) would have written more by then.
    const witness = await createPipe(s, {
      ...kafkaPipe('stop_witness', { brokers: brokers(), topics: topic }),
      settings,
    });
    await committedToEnd(witness, 3);
    expect(await totals('stop_witness')).toEqual({ n: 4000, ids: 4000 });
    expect((await totals('stop_start')).n).toBe(atStop);
    expect((await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${witness}` })).statusCode).toBe(200);
    expect(atStop).toBeLessThan(4000);
    expect((await s.request({ method: 'PATCH', url, body: { command: 'start' } })).statusCode).toBe(200);
    await waitForCount('stop_start', 4000);
    await committedToEnd(id, 3);
    expect(await totals('stop_start')).toEqual({ n: 4000, ids: 4000 });

    const doomed = await createPipe(s, {
      ...kafkaPipe('doomed', { brokers: brokers(), topics: topic }),
      settings,
    });
    await waitForCount('doomed', 1);
    const deleted = await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${doomed}` });
    expect(deleted.statusCode).toBe(200);
    expect((await s.request({ method: 'GET', url: `${s.pipesUrl}/${doomed}` })).statusCode).toBe(404);
    const stages = await sql(
      s,
      "SELECT count() AS n FROM system.tables WHERE database = '_sluice_staging' AND name LIKE '%" +
        doomed.replace(/-/g, '') +
        "%'",
    );
    expect(stages).toEqual([{ n: 0 }]);
    expect(s.logs.join('\n')).not.toMatch(/"level":50/);
  });
});
