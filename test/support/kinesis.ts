import { randomUUID } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import {
  CreateStreamCommand,
  DescribeStreamSummaryCommand,
  KinesisClient,
  ListShardsCommand,
  MergeShardsCommand,
  PutRecordsCommand,
  type Shard,
  SplitShardCommand,
} from '@aws-sdk/client-kinesis';
import { NodeHttpHandler } from '@smithy/node-http-handler';

/** kinesalite ships no types: its default export builds an (unlistened) http.Server. */
type Kinesalite = (options: {
  createStreamMs?: number;
  deleteStreamMs?: number;
  updateStreamMs?: number;
  shardLimit?: number;
  path?: string;
}) => Server;
const kinesalite = createRequire(import.meta.url)('kinesalite') as Kinesalite;

/** Made-up keys: kinesalite wants a well-formed SigV4 Authorization header but never checks it. */
export const KINESIS_CREDENTIALS = { accessKeyId: 'AKIAKINESALITE000000', secretAccessKey: 'kinesalite' };
export const KINESIS_REGION = 'us-east-1';
/** PutRecords takes at most 500 records a call. */
const PUT_BATCH = 500;

export interface KinesisStartOptions {
  /** Open shards across all streams (kinesalite's account limit, default 10). */
  shardLimit?: number;
}

export interface PutResult {
  shardId: string;
  sequenceNumber: string;
}

export interface RunningKinesis {
  /** http://127.0.0.1:port */
  endpoint: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** A client for this server (HTTP/1.1: kinesalite does not speak the SDK's default HTTP/2). */
  client: KinesisClient;
  /** The variables a child Sluice process needs to reach this server the SDK's own way. */
  environment(): Record<string, string>;
  /** CreateStream, then waits until the stream is ACTIVE. */
  createStream(name: string, shards: number): Promise<void>;
  /** PutRecords in calls of 500; the results in the records' order. */
  put(stream: string, records: { key: string; data: string | Buffer }[]): Promise<PutResult[]>;
  /** SplitShard at the middle of the shard's hash key range; waits until ACTIVE; the two children. */
  split(stream: string, shardId: string): Promise<[string, string]>;
  /** MergeShards; waits until ACTIVE; the child. */
  merge(stream: string, shardId: string, adjacentShardId: string): Promise<string>;
  /** ListShards: every shard, open and closed, with parent ids and sequence number ranges. */
  shards(stream: string): Promise<Shard[]>;
  stop(): Promise<void>;
}

/**
 * kinesalite in this process, in memory, on a free loopback port, with stream creation and resharding
 * instant (`createStreamMs: 0`).
 */
export async function startKinesis(options: KinesisStartOptions = {}): Promise<RunningKinesis> {
  const server = kinesalite({
    createStreamMs: 0,
    deleteStreamMs: 0,
    updateStreamMs: 0,
    shardLimit: options.shardLimit ?? 10,
  });
  await listen(server);
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = kinesisClient(endpoint);

  return runningKinesis(endpoint, client, async () => {
    server.closeAllConnections();
    // kinesalite's close() closes its store, then the server.
    await new Promise<void>((resolve, reject) =>
      server.close((error) => (error ? reject(error) : resolve())),
    );
  });
}

/**
 * kinesalite (startKinesis) with `stream` made, of `shards` shards, and its environment set in
 * process.env: the AWS SDK of this process (a Sluice started in it) finds it the SDK's own way.
 */
export async function startKinesisWithStream(stream: string, shards = 1): Promise<RunningKinesis> {
  const kinesis = await startKinesis();
  try {
    await kinesis.createStream(stream, shards);
  } catch (error) {
    await kinesis.stop();
    throw error;
  }
  Object.assign(process.env, kinesis.environment());
  return kinesis;
}

/** A Kinesis server a test runs: its endpoint, a client, the stream tools; `stop` after the client. */
export function runningKinesis(
  endpoint: string,
  client: KinesisClient,
  stop: () => Promise<void>,
): RunningKinesis {
  return {
    endpoint,
    region: KINESIS_REGION,
    credentials: { ...KINESIS_CREDENTIALS },
    client,
    environment: () => ({ AWS_ENDPOINT_URL_KINESIS: endpoint, AWS_REGION: KINESIS_REGION }),
    ...streamTools(client),
    async stop() {
      client.destroy();
      await stop();
    },
  };
}

/** What a test does with a stream, through any server's client. */
export type StreamTools = Pick<RunningKinesis, 'createStream' | 'put' | 'split' | 'merge' | 'shards'>;

export function streamTools(client: KinesisClient): StreamTools {
  const waitActive = async (stream: string) => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const { StreamDescriptionSummary: summary } = await client.send(
        new DescribeStreamSummaryCommand({ StreamName: stream }),
      );
      if (summary?.StreamStatus === 'ACTIVE') return;
      if (Date.now() > deadline) throw new Error(`stream ${stream} is still ${summary?.StreamStatus}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  const shards = async (stream: string) => {
    const { Shards } = await client.send(new ListShardsCommand({ StreamName: stream }));
    return Shards ?? [];
  };
  const shard = async (stream: string, shardId: string) => {
    const found = (await shards(stream)).find((s) => s.ShardId === shardId);
    if (!found) throw new Error(`no shard ${shardId} in stream ${stream}`);
    return found;
  };

  return {
    async createStream(name, shardCount) {
      await client.send(new CreateStreamCommand({ StreamName: name, ShardCount: shardCount }));
      await waitActive(name);
    },
    async put(stream, records) {
      const results: PutResult[] = [];
      for (let start = 0; start < records.length; start += PUT_BATCH) {
        const batch = records.slice(start, start + PUT_BATCH);
        const response = await client.send(
          new PutRecordsCommand({
            StreamName: stream,
            Records: batch.map((r) => ({
              PartitionKey: r.key,
              Data: typeof r.data === 'string' ? Buffer.from(r.data) : r.data,
            })),
          }),
        );
        if (response.FailedRecordCount) {
          throw new Error(`PutRecords failed ${response.FailedRecordCount} of ${batch.length} records`);
        }
        for (const r of response.Records ?? []) {
          results.push({ shardId: r.ShardId ?? '', sequenceNumber: r.SequenceNumber ?? '' });
        }
      }
      return results;
    },
    async split(stream, shardId) {
      const parent = await shard(stream, shardId);
      const low = BigInt(parent.HashKeyRange?.StartingHashKey ?? '0');
      const high = BigInt(parent.HashKeyRange?.EndingHashKey ?? '0');
      await client.send(
        new SplitShardCommand({
          StreamName: stream,
          ShardToSplit: shardId,
          NewStartingHashKey: ((low + high + 1n) / 2n).toString(),
        }),
      );
      await waitActive(stream);
      const children = (await shards(stream)).filter(
        (s) => s.ParentShardId === shardId && !s.AdjacentParentShardId,
      );
      if (children.length !== 2) throw new Error(`split of ${shardId} left ${children.length} children`);
      return [children[0]?.ShardId ?? '', children[1]?.ShardId ?? ''];
    },
    async merge(stream, shardId, adjacentShardId) {
      await client.send(
        new MergeShardsCommand({
          StreamName: stream,
          ShardToMerge: shardId,
          AdjacentShardToMerge: adjacentShardId,
        }),
      );
      await waitActive(stream);
      const child = (await shards(stream)).find(
        (s) => s.ParentShardId === shardId && s.AdjacentParentShardId === adjacentShardId,
      );
      if (!child?.ShardId) throw new Error(`merge of ${shardId} and ${adjacentShardId} left no child`);
      return child.ShardId;
    },
    shards,
  };
}

/** A KinesisClient for an endpoint: HTTP/1.1 and the made-up keys. */
export function kinesisClient(
  endpoint: string,
  config: ConstructorParameters<typeof KinesisClient>[0] = {},
): KinesisClient {
  return new KinesisClient({
    endpoint,
    region: KINESIS_REGION,
    credentials: KINESIS_CREDENTIALS,
    requestHandler: new NodeHttpHandler(),
    ...config,
  });
}

/**
 * Decides whether to refuse one request, from its X-Amz-Target (`Kinesis_20131202.GetRecords`), JSON
 * body and headers (a test may also just look at them): true refuses it as throttled, an exception name (`ExpiredIteratorException`) with that
 * exception, false passes it on.
 */
export type ThrottleRule = (
  target: string,
  body: Record<string, unknown>,
  headers: Record<string, string | string[] | undefined>,
) => boolean | string;

export interface ThrottlingProxy {
  /** http://127.0.0.1:port */
  endpoint: string;
  /** Requests answered with ProvisionedThroughputExceededException so far. */
  readonly throttled: number;
  /** Requests passed on to the server so far. */
  readonly forwarded: number;
  setRule(rule: ThrottleRule): void;
  stop(): Promise<void>;
}

/**
 * An HTTP proxy in front of `upstream` (a kinesalite endpoint) that passes every request on unchanged,
 * except those `rule` picks, which it answers as real Kinesis does when a shard's read or write rate
 * is exceeded: 400 with a ProvisionedThroughputExceededException body, which the SDK raises as that
 * exception class (and, being a throttling error, retries up to the client's maxAttempts); or, when
 * the rule names another exception, 400 with that one.
 */
export async function startThrottlingProxy(upstream: string, rule: ThrottleRule): Promise<ThrottlingProxy> {
  const target = new URL(upstream);
  let current = rule;
  let throttled = 0;
  let forwarded = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const amzTarget = String(req.headers['x-amz-target'] ?? '');
      let parsed: Record<string, unknown> = {};
      try {
        const value: unknown = JSON.parse(body.toString('utf8'));
        if (value && typeof value === 'object') parsed = value as Record<string, unknown>;
      } catch {}
      const verdict = current(amzTarget, parsed, req.headers);
      if (verdict) {
        throttled++;
        const type = typeof verdict === 'string' ? verdict : 'ProvisionedThroughputExceededException';
        const shardId = typeof parsed.ShardId === 'string' ? parsed.ShardId : 'shardId-000000000000';
        const stream = typeof parsed.StreamName === 'string' ? parsed.StreamName : 'stream';
        const payload = JSON.stringify({
          __type: type,
          message:
            type === 'ProvisionedThroughputExceededException'
              ? `Rate exceeded for shard ${shardId} in stream ${stream} under account 000000000000.`
              : `${type} (refused by the test's proxy)`,
        });
        res.writeHead(400, {
          'content-type': 'application/x-amz-json-1.1',
          'content-length': Buffer.byteLength(payload),
          'x-amzn-requestid': randomUUID(),
        });
        res.end(payload);
        return;
      }
      forwarded++;
      const out = request(
        {
          host: target.hostname,
          port: target.port,
          method: req.method,
          path: req.url,
          headers: req.headers,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      out.on('error', (error) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(String(error));
      });
      out.end(body);
    });
  });
  await listen(server);
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get throttled() {
      return throttled;
    },
    get forwarded() {
      return forwarded;
    },
    setRule(next) {
      current = next;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
    },
  };
}

/** Listens on a port the system picks on loopback (no window between choosing and binding it). */
function listen(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
}
