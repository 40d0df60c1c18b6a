import type { NodeHttp2Handler } from '@smithy/node-http-handler';
import { CodedError } from '../../../errors.js';
import { type KinesisConnection, type KinesisSource, kinesisClient } from './client.js';

/**
 * A client for SubscribeToShard, which AWS serves over HTTP/2 only. The SDK's HTTP/2 handler
 * gives each event stream a session of its own and closes it with a GOAWAY; one session shared
 * by every subscription of the pipe is what the KCL does (one HTTP/2 connection, a stream per
 * shard), and kinesis-local, the compatible server the tests run, answers that GOAWAY with a PING
 * the connection dies of: event streams go on the shared, pooled session.
 */
export async function connectFanOut(
  source: KinesisSource,
  organizationId: string,
): Promise<KinesisConnection> {
  const { NodeHttp2Handler } = await import('@smithy/node-http-handler');
  return kinesisClient(source, organizationId, new SharedEventStreams(new NodeHttp2Handler()));
}

/** The HTTP/2 handler, with event streams on its pooled sessions. */
class SharedEventStreams {
  constructor(private readonly http2: NodeHttp2Handler) {}
  handle(...[request, options]: Parameters<NodeHttp2Handler['handle']>) {
    return this.http2.handle(request, { ...options, isEventStream: false });
  }
  updateHttpClientConfig(...args: Parameters<NodeHttp2Handler['updateHttpClientConfig']>) {
    this.http2.updateHttpClientConfig(...args);
  }
  httpHandlerConfigs() {
    return this.http2.httpHandlerConfigs();
  }
  destroy() {
    this.http2.destroy();
  }
}

/** The stream's ARN, which the consumer calls name the stream by. */
export async function streamArn(connection: KinesisConnection, streamName: string, signal?: AbortSignal) {
  const { client, sdk } = connection;
  const summary = await client.send(new sdk.DescribeStreamSummaryCommand({ StreamName: streamName }), {
    abortSignal: signal,
  });
  const arn = summary.StreamDescriptionSummary?.StreamARN;
  if (!arn) throw new CodedError('SLUICE_ERR_SOURCE', `Kinesis gave no ARN for the stream ${streamName}`);
  return arn;
}
