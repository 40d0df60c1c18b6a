import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Consumer, Producer } from '@platformatic/kafka';
import type { Sluice } from '../src/app.js';
import type { EmbeddedEngine } from '../src/engine/index.js';
import { type RunningKafka, startKafka } from '../test/support/kafka.js';
import { engineCounters } from './engine-counters.js';
import {
  benchSluice,
  cpuUsage,
  defaultScope,
  followBacklog,
  mbps,
  printTable,
  type Scope,
  serviceEngine,
  timed,
} from './support.js';

/** Megabytes of messages in the backlog test (the memory check asks for 5,000). */
const BACKLOG_MB = Number(process.env.BENCH_KAFKA_MB ?? 300);
const MESSAGE_BYTES = 1600;
const PARTITIONS = 4;
/** Produce to visible at a steady rate: the p99 wanted with this wait (issue 39). */
const LATENCY_GOAL = { waitMs: 1000, p99Ms: 1000 };
/** A new pipe's first rows are visible this long after the create's response (issue 39). */
const FIRST_ROWS_GOAL_SECONDS = 1;
const STEADY = { perSecond: 10_000, seconds: Number(process.env.BENCH_KAFKA_STEADY_SECONDS ?? 20) };

/**
 * Kafka pipes against a real broker, beside a bare consumer of the same client library reading
 * the same topic in the same run: end-to-end MB/s and rows/s from a backlog to visible rows (one
 * replica), the ratio to the bare consumer, the Sluice process's peak RSS while it drains the
 * backlog, and produce-to-visible latency at a steady 10,000 messages/s.
 */
export async function benchKafka(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-bench-kafka-'));
  const kafka = await startKafka();
  const sluice = await benchSluice(dir, { SLUICE_ALLOW_PLAINTEXT_KAFKA: 'true' });
  try {
    const scope = await defaultScope(sluice);
    const count = Math.round((BACKLOG_MB * 1e6) / MESSAGE_BYTES);
    await kafka.createTopic('backlog', PARTITIONS);
    const produced = await timed(() => produceMessages(kafka, 'backlog', 0, count));
    const bytes = count * MESSAGE_BYTES;
    const bare = await timed(() => bareConsume(kafka, 'backlog', count));
    let peakRss = 0;
    const usage = cpuUsage();
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
    }, 100);
    // The service's engine starts with the pipe's create (its checks) unless it runs already: its
    // counters are then read after only, so that nothing starts it before the create.
    const engine = (await serviceEngine(sluice, scope)) as EmbeddedEngine;
    const counters = await engineCounters(engine, { sinceStart: engine.processId() === undefined });
    const pipe = await followBacklog(
      sluice,
      scope,
      () => sluice.pipes.create(scope, pipeBody('backlog', kafka, { streaming_max_insert_wait_ms: 5000 })),
      count,
    );
    clearInterval(sampler);
    const cpu = usage();
    const engineSaid = await counters.describe();
    const steadyMbps = (pipe.steadyRowsPerSecond * MESSAGE_BYTES) / 1e6;
    const afterFirstMbps = (pipe.afterFirstRowsPerSecond * MESSAGE_BYTES) / 1e6;
    const bareMbps = bytes / 1e6 / bare;
    printTable(
      `Kafka: ${count} JSON messages of ${MESSAGE_BYTES} bytes (${(bytes / 1e6).toFixed(0)} MB), ${PARTITIONS} partitions, one replica`,
      [
        {
          reader: 'producer (idempotent)',
          'MB/s': mbps(bytes, produced),
          'rows/s': Math.round(count / produced),
        },
        {
          reader: 'bare consumer (same client, fetch loop)',
          'MB/s': mbps(bytes, bare),
          'rows/s': Math.round(count / bare),
        },
        {
          reader: "Sluice pipe, from the first batch's commit to the last full batch",
          'MB/s': afterFirstMbps.toFixed(1),
          'rows/s': Math.round(pipe.afterFirstRowsPerSecond),
          'ratio vs bare consumer': (afterFirstMbps / bareMbps).toFixed(2),
        },
        {
          reader: 'Sluice pipe, from a quarter of the rows to the last full batch (may be one burst)',
          'MB/s': steadyMbps.toFixed(1),
          'rows/s': Math.round(pipe.steadyRowsPerSecond),
          'ratio vs bare consumer': (steadyMbps / bareMbps).toFixed(2),
        },
        {
          reader: 'Sluice pipe, create to 90% of the rows visible',
          'MB/s': mbps(0.9 * bytes, pipe.ninetySeconds),
          'rows/s': Math.round((0.9 * count) / pipe.ninetySeconds),
        },
        {
          reader: 'Sluice pipe, create to every row visible',
          'MB/s': mbps(bytes, pipe.totalSeconds),
          'rows/s': Math.round(count / pipe.totalSeconds),
        },
      ],
    );
    console.log(
      `while ingesting: the machine's ${cpus().length} cores ${pipe.steadyMachineBusy} busy at the steady rate (${cpu.machineBusy} from create to the last row, the tail's wait included); this process ${cpu.processCores} cores, its event loop ${cpu.eventLoop} busy (the engines and the broker are processes of their own); ${engineSaid}`,
    );
    const firstMet = pipe.firstRowsAfterResponseSeconds <= FIRST_ROWS_GOAL_SECONDS ? 'met' : 'NOT met';
    console.log(
      `create (checks against the broker) ${pipe.createSeconds.toFixed(2)} s; first rows visible ${pipe.firstRowsAfterResponseSeconds.toFixed(2)} s after the create's response (${pipe.firstRowsSeconds.toFixed(2)} s after its request), goal ${FIRST_ROWS_GOAL_SECONDS} s after the response: ${firstMet}; peak RSS of this process (Sluice, producer and bench) ${Math.round(peakRss / 1e6)} MB`,
    );
    console.log(`rows visible as the batches committed: ${pipe.commits}`);
    console.log(
      `where the first rows' time went: the create's checks ${pipe.createSeconds.toFixed(2)} s, then the run's start (group join, start offsets, destinations) until Running ${pipe.runningAfterCreateSeconds.toFixed(2)} s, then the first batch (fetch, flush, stages, load, move, commit) ${(pipe.firstRowsAfterResponseSeconds - pipe.runningAfterCreateSeconds).toFixed(2)} s`,
    );
    const latencies = [];
    for (const waitMs of [5000, 1000, 500]) latencies.push(await steadyLatency(sluice, scope, kafka, waitMs));
    printTable(
      `Kafka: produce to visible rows at a steady ${STEADY.perSecond} messages/s for ${STEADY.seconds} s`,
      latencies,
    );
  } finally {
    await sluice.close();
    await kafka.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** A JSON message of about MESSAGE_BYTES with the id and the time it was made. */
function message(id: number, sent: number): Buffer {
  const head = `{"id":${id},"sent":${sent},"kind":"event","payload":"`;
  return Buffer.from(`${head}${'x'.repeat(MESSAGE_BYTES - head.length - 2)}"}`);
}

async function produceMessages(kafka: RunningKafka, topic: string, from: number, count: number) {
  const producer = new Producer({ clientId: 'bench', ...kafka.connection('plaintext'), idempotent: true });
  try {
    // One send at a time: an idempotent producer's concurrent sends can reach the broker out of order.
    // 500 a send: a partition's record batch stays under the broker's 1 MB limit however the
    // client spreads them (2,000 a send could put more than 1 MB on one partition).
    const batch = 500;
    for (let at = 0; at < count; at += batch) {
      const now = Date.now();
      const size = Math.min(batch, count - at);
      await producer.send({
        messages: Array.from({ length: size }, (_, i) => ({ topic, value: message(from + at + i, now) })),
      });
    }
  } finally {
    await producer.close();
  }
}

/** Reads every message of the topic with the client's fetch, as fast as it goes, and drops them. */
async function bareConsume(kafka: RunningKafka, topic: string, count: number): Promise<void> {
  const consumer = new Consumer({
    clientId: 'bench-bare',
    groupId: 'bench-bare',
    ...kafka.connection('plaintext'),
  });
  try {
    const metadata = await consumer.metadata({ topics: [topic] });
    const info = metadata.topics.get(topic);
    if (!info) throw new Error('no topic');
    const offsets = new Array<bigint>(PARTITIONS).fill(0n);
    let seen = 0;
    while (seen < count) {
      const byLeader = new Map<number, number[]>();
      for (const [i, p] of info.partitions.entries()) {
        byLeader.set(p.leader, [...(byLeader.get(p.leader) ?? []), i]);
      }
      await Promise.all(
        [...byLeader].map(async ([node, partitions]) => {
          const response = await consumer.fetch({
            node,
            maxWaitTime: 500,
            minBytes: 1,
            maxBytes: 32 * 1024 * 1024,
            topics: [
              {
                topicId: info.id,
                partitions: partitions.map((partition) => ({
                  partition,
                  fetchOffset: offsets[partition] as bigint,
                  partitionMaxBytes: 8 * 1024 * 1024,
                  currentLeaderEpoch: -1,
                  lastFetchedEpoch: -1,
                })),
              },
            ],
          });
          for (const answer of response.responses[0]?.partitions ?? []) {
            for (const batch of answer.records ?? []) {
              seen += batch.records.length;
              offsets[answer.partitionIndex] = batch.firstOffset + BigInt(batch.lastOffsetDelta) + 1n;
            }
          }
        }),
      );
    }
  } finally {
    await consumer.close();
  }
}

function pipeBody(topic: string, kafka: RunningKafka, settings: Record<string, number>) {
  return {
    name: `bench ${topic}`,
    source: {
      kafka: { format: 'JSONEachRow', brokers: `plaintext://${kafka.bootstrap.plaintext}`, topics: topic },
    },
    destination: {
      database: 'bench',
      table: topic,
      tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
      columns: [
        { name: 'id', type: 'UInt64' },
        { name: 'sent', type: 'UInt64' },
        { name: 'kind', type: 'String' },
        { name: 'payload', type: 'String' },
      ],
    },
    settings,
  };
}

/** Produces at a steady rate and records when each message became visible in the table. */
async function steadyLatency(sluice: Sluice, scope: Scope, kafka: RunningKafka, waitMs: number) {
  const topic = `steady_${waitMs}`;
  await kafka.createTopic(topic, PARTITIONS);
  const pipe = await sluice.pipes.create(
    scope,
    pipeBody(topic, kafka, { streaming_max_insert_wait_ms: waitMs }),
  );
  const service = (await sluice.identity.listServices(scope.organizationId)).find(
    (x) => x.id === scope.serviceId,
  );
  if (!service) throw new Error('no service');
  const engine = sluice.engines.engineFor(service);
  const total = STEADY.perSecond * STEADY.seconds;
  const latencies: number[] = [];
  let done = false;
  let seenUpTo = -1;
  const seen = new Set<number>();
  const watcher = (async () => {
    while (!done || seen.size < total) {
      const result = await engine
        .query(`SELECT id, sent FROM bench.${topic} WHERE id > ${seenUpTo}`)
        .catch(() => ({ rows: [] as Record<string, unknown>[] }));
      const now = Date.now();
      for (const row of result.rows) {
        const id = Number(row.id);
        if (seen.has(id)) continue;
        seen.add(id);
        latencies.push(now - Number(row.sent));
      }
      while (seen.has(seenUpTo + 1)) seenUpTo += 1;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const producer = new Producer({
    clientId: 'bench-steady',
    ...kafka.connection('plaintext'),
    idempotent: true,
  });
  const start = Date.now();
  const tick = 100;
  for (let sent = 0; sent < total; ) {
    const due = Math.min(total, Math.round(((Date.now() - start + tick) / 1000) * STEADY.perSecond));
    // At most 500 a send (as produceMessages): a send that fell behind stays under the broker's 1 MB.
    while (due > sent) {
      const now = Date.now();
      const size = Math.min(500, due - sent);
      await producer.send({
        messages: Array.from({ length: size }, (_, i) => ({ topic, value: message(sent + i, now) })),
      });
      sent += size;
    }
    await new Promise((resolve) => setTimeout(resolve, tick));
  }
  await producer.close();
  done = true;
  await watcher;
  await sluice.pipes.command(scope, pipe.id, { command: 'stop' });
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return {
    streaming_max_insert_wait_ms: waitMs,
    messages: total,
    'p50 ms': at(0.5),
    'p99 ms': at(0.99),
    'max ms': at(1),
    // Issue 39: the default wait stays 5000 ms; with 1000 ms, 99% of messages visible within 1 s.
    goal:
      waitMs === LATENCY_GOAL.waitMs
        ? `p99 < ${LATENCY_GOAL.p99Ms}: ${at(0.99) < LATENCY_GOAL.p99Ms ? 'met' : 'NOT met'}`
        : '',
  };
}
