import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';
import { configFromCreate } from '../src/pipes/model.js';
import type { CreatePipeBody } from '../src/pipes/schema/index.js';
import type { RunContext, SourceRun } from '../src/pipes/sources/index.js';
import { kinesisConnector, kinesisKind } from '../src/pipes/sources/kinesis/index.js';
import { type RunningKinesis, startKinesisWithStream, startThrottlingProxy } from './support/kinesis.js';
import { kinesisBody } from './support/kinesis-pipes.js';

// A stream run's first answer waits for its first records (src/pipes/sources/messages/first-messages.ts):
// the runtime makes the first batch's stages meanwhile, and the batch is claimed as the records
// land rather than at a poll after an idle answer. A real Kinesis (kinesalite) run, opened by its
// connector as the runtime opens it; the runtime's side of the run's context is a stand-in (the
// run reads no progress but the cursor, and this test loads nothing).

const STREAM = 'first-answer';

/** A run's context as the runtime gives it, for a pipe of `stream`: the runtime's side a stand-in. */
function runContext(stream: string, signal: AbortSignal): RunContext {
  const pipeId = '00000000-0000-4000-8000-00000000f125';
  const body = kinesisBody('first_answer', { streamName: stream }) as unknown as CreatePipeBody;
  return {
    pipeId,
    config: configFromCreate(body, pipeId, kinesisKind),
    sourceReader: undefined as never,
    target: undefined as never,
    progress: {
      cursor: async () => null,
      openBatches: async () => [],
      reset: async () => {},
      setFilesPending: async () => {},
      report: async () => {},
    },
    localFilesDir: '',
    allowPrivateSources: true,
    allowPlaintextKafka: false,
    awsRegion: undefined,
    organizationId: 'org',
    startedIn: 'Provisioning',
    logger: createLogger('silent'),
    signal,
    redact: (text) => text,
    setState: async () => true,
  };
}

describe("a Kinesis run's first answer (kinesalite; stand-in runtime context)", () => {
  let kinesis: RunningKinesis;
  const stopping = new AbortController();
  let run: SourceRun | undefined;
  beforeAll(async () => {
    kinesis = await startKinesisWithStream(STREAM, 1);
  });
  afterAll(async () => {
    stopping.abort();
    await run?.close();
    await kinesis?.stop();
  });

  it('waits for the first records, and with the first batch worth of them held answers with its claim', async () => {
    // Five records of 900 KB: past the first batch's 4 MiB (messages/flush.ts), so it is due as
    // soon as they are held.
    const value = (i: number) => JSON.stringify({ id: i, name: 'x'.repeat(900_000) });
    await kinesis.put(
      STREAM,
      [0, 1, 2, 3, 4].map((i) => ({ key: `k${i}`, data: value(i) })),
    );
    run = await kinesisConnector.open(runContext(STREAM, stopping.signal));
    const asked = performance.now();
    const answer = await run.next(null);
    // Woken by the records (a shard read tells the run), not by the end of its second of waiting.
    expect(performance.now() - asked).toBeLessThan(1000);
    expect(answer).not.toBe('idle');
    const range = (answer as unknown as { range: { parts: { records: number }[] } }).range;
    // The first batch takes no more than its 4 MiB: four of the five.
    expect(range.parts.reduce((n, part) => n + part.records, 0)).toBe(4);
  });

  it("asks each shard for its share of the first batch until the run's first claim, then for whole pages (GetRecords seen by a proxy)", async () => {
    const stream = 'first-pages';
    await kinesis.createStream(stream, 4);
    await kinesis.put(
      stream,
      Array.from({ length: 200 }, (_, i) => ({ key: `k${i}`, data: JSON.stringify({ id: i, name: 'n' }) })),
    );
    const limits: { limit: unknown; claimed: boolean }[] = [];
    let claimed = false;
    const proxy = await startThrottlingProxy(kinesis.endpoint, (target, body) => {
      if (target.endsWith('.GetRecords')) limits.push({ limit: body.Limit, claimed });
      return false;
    });
    const direct = process.env.AWS_ENDPOINT_URL_KINESIS;
    process.env.AWS_ENDPOINT_URL_KINESIS = proxy.endpoint;
    const stop = new AbortController();
    const second = await kinesisConnector.open(runContext(stream, stop.signal));
    try {
      let answer = await second.next(null);
      for (let tries = 0; answer === 'idle' && tries < 50; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        answer = await second.next(null);
      }
      expect(answer).not.toBe('idle');
      claimed = true;
      const before = limits.length;
      await expect.poll(() => limits.length, { timeout: 5000 }).toBeGreaterThan(before);
      // Four open shards: 10,000 rows (the first batch's most) in shares of 2,500; then whole pages.
      expect(new Set(limits.filter((l) => !l.claimed).map((l) => l.limit))).toEqual(new Set([2500]));
      expect(limits.filter((l) => !l.claimed).length).toBeGreaterThanOrEqual(4);
      expect(new Set(limits.filter((l) => l.claimed).map((l) => l.limit))).toEqual(new Set([10_000]));
    } finally {
      stop.abort();
      await second.close();
      process.env.AWS_ENDPOINT_URL_KINESIS = direct;
      await proxy.stop();
    }
  });
});
