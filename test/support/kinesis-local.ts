import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  type Consumer,
  DescribeStreamSummaryCommand,
  ListStreamConsumersCommand,
  ListStreamsCommand,
} from '@aws-sdk/client-kinesis';
import { KINESIS_REGION, kinesisClient, type RunningKinesis, runningKinesis } from './kinesis.js';
import { freePort } from './postgres.js';

const MAIN = createRequire(import.meta.url).resolve('kinesis-local/main.js');

export interface RunningKinesisLocal extends RunningKinesis {
  /** ListStreamConsumers: the stream's registered consumers (enhanced fan-out). */
  consumers(stream: string): Promise<Consumer[]>;
}

/**
 * kinesis-local (kinesis-mock built for Node) in a child process on a free loopback port: unlike
 * kinesalite it serves enhanced fan-out (RegisterStreamConsumer, SubscribeToShard over HTTP/2),
 * in memory. Stream creation and resharding are instant; a consumer takes 300 ms to become
 * ACTIVE, as on AWS it takes a while.
 */
export async function startKinesisLocal(): Promise<RunningKinesisLocal> {
  const [port, tlsPort] = [await freePort(), await freePort()];
  const child: ChildProcess = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      KINESIS_MOCK_PLAIN_PORT: String(port),
      KINESIS_MOCK_TLS_PORT: String(tlsPort),
      KINESIS_MOCK_CERT_PATH: join(dirname(MAIN), 'server.json'),
      AWS_REGION: KINESIS_REGION,
      LOG_LEVEL: 'ERROR',
      CREATE_STREAM_DURATION: '0ms',
      DELETE_STREAM_DURATION: '0ms',
      SPLIT_SHARD_DURATION: '0ms',
      MERGE_SHARDS_DURATION: '0ms',
      REGISTER_STREAM_CONSUMER_DURATION: '300ms',
      DEREGISTER_STREAM_CONSUMER_DURATION: '0ms',
    },
    stdio: 'ignore',
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  // A test process that dies without stop() does not leave the server behind.
  const orphaned = () => child.kill('SIGKILL');
  process.once('exit', orphaned);
  void exited.then(() => process.off('exit', orphaned));
  const endpoint = `http://127.0.0.1:${port}`;
  const client = kinesisClient(endpoint);
  try {
    await answering(client, exited);
  } catch (error) {
    client.destroy();
    child.kill('SIGKILL');
    throw error;
  }
  return {
    ...runningKinesis(endpoint, client, async () => {
      child.kill('SIGTERM');
      await exited;
    }),
    async consumers(stream) {
      const { StreamDescriptionSummary: summary } = await client.send(
        new DescribeStreamSummaryCommand({ StreamName: stream }),
      );
      const { Consumers } = await client.send(
        new ListStreamConsumersCommand({ StreamARN: summary?.StreamARN }),
      );
      return Consumers ?? [];
    },
  };
}

/** Until the server answers ListStreams (about a second); fails at once if it exits. */
async function answering(client: ReturnType<typeof kinesisClient>, exited: Promise<unknown>): Promise<void> {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await client.send(new ListStreamsCommand({}));
      return;
    } catch (error) {
      if (gone) throw new Error('kinesis-local exited before it answered');
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
