import type { KinesisClient } from '@aws-sdk/client-kinesis';
import { PermanentError } from '../../records/index.js';
import { type AwsKeys, assumeRole } from '../aws/index.js';

/** A Kinesis source as stored (kinesis/config.ts `KinesisSource`). */
export interface KinesisSource {
  streamName: string;
  region: string;
  format: 'JSONEachRow' | 'Avro' | 'AvroConfluent';
  iteratorType?: 'TRIM_HORIZON' | 'LATEST' | 'AT_TIMESTAMP';
  /** UNIX seconds, or Terraform's YYYY-MM-DDThh:mm (UTC), as sent (model.ts `instantOf`). */
  timestamp?: number | string;
  useEnhancedFanOut?: boolean;
  authentication?: 'IAM_ROLE' | 'IAM_USER';
  iamRole?: string;
  accessKey?: { accessKeyId: string; secretKey: string };
}

/** The SDK's commands, loaded on first use (a node with no Kinesis pipe never holds the SDK). */
export type KinesisSdk = typeof import('@aws-sdk/client-kinesis');

export interface KinesisConnection {
  client: KinesisClient;
  sdk: KinesisSdk;
  close(): void;
}

/**
 * A client for the source's stream: its access key (IAM_USER), or a role assumed through STS with
 * this node's own AWS credentials (IAM_ROLE), in the source's region. The endpoint is the SDK's
 * own: AWS_ENDPOINT_URL_KINESIS (or AWS_ENDPOINT_URL) points it at a local or compatible server.
 * HTTP/1.1, not the SDK's default HTTP/2 for Kinesis: HTTP/2 is only needed for SubscribeToShard
 * (fan-out.ts has its own client), and compatible servers (kinesalite) speak only HTTP/1.1.
 */
export async function connectKinesis(
  source: KinesisSource,
  organizationId: string,
): Promise<KinesisConnection> {
  const { NodeHttpHandler } = await import('@smithy/node-http-handler');
  return kinesisClient(
    source,
    organizationId,
    new NodeHttpHandler({
      connectionTimeout: 10_000,
      requestTimeout: 30_000,
      // Without it a request past its timeout only logs a warning and stays pending.
      throwOnRequestTimeout: true,
    }),
  );
}

type RequestHandler = NonNullable<
  NonNullable<ConstructorParameters<typeof KinesisClient>[0]>['requestHandler']
>;

/** A client of the source's keys and region that sends through `requestHandler`. */
export async function kinesisClient(
  source: KinesisSource,
  organizationId: string,
  requestHandler: RequestHandler,
): Promise<KinesisConnection> {
  // Asked once here, so that a role STS refuses fails the connection (a 400 at create).
  await sourceKeys(source, organizationId);
  const sdk = await import('@aws-sdk/client-kinesis');
  const client = new sdk.KinesisClient({
    region: source.region,
    credentials: () => sourceIdentity(source, organizationId),
    requestHandler,
    // Throttling and expired iterators are the reader's to handle (backoff, Degraded): one try here.
    maxAttempts: 1,
  });
  return { client, sdk, close: () => client.destroy() };
}

/** How long the SDK keeps a role's keys before it asks again (assumeRole keeps them until near expiry). */
const ROLE_KEYS_ASKED_EVERY_MS = 10 * 60_000;

/**
 * The keys as the SDK's credentials: a role's carry an expiration, so a long run asks again and
 * gets fresh keys before the assumed ones expire; an access key never changes.
 */
async function sourceIdentity(source: KinesisSource, organizationId: string) {
  const keys = await sourceKeys(source, organizationId);
  return {
    accessKeyId: keys.accessKeyId,
    secretAccessKey: keys.secretKey,
    ...(keys.sessionToken
      ? { sessionToken: keys.sessionToken, expiration: new Date(Date.now() + ROLE_KEYS_ASKED_EVERY_MS) }
      : {}),
  };
}

async function sourceKeys(source: KinesisSource, organizationId: string): Promise<AwsKeys> {
  if (source.authentication === 'IAM_ROLE' || (!source.authentication && source.iamRole)) {
    if (!source.iamRole)
      throw new PermanentError('SLUICE_ERR_SOURCE_CONFIG', 'IAM_ROLE authentication needs iamRole');
    return assumeRole(source.iamRole, organizationId);
  }
  if (!source.accessKey)
    throw new PermanentError('SLUICE_ERR_SOURCE_CONFIG', 'IAM_USER authentication needs accessKey');
  return source.accessKey;
}

/** The SDK's name for an error (`ProvisionedThroughputExceededException`, ...). */
export function awsErrorName(error: unknown): string {
  return (error as { name?: string })?.name ?? 'Error';
}
