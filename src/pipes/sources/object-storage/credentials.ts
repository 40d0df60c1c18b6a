import { fromTemporaryCredentials } from '@aws-sdk/credential-providers';
import type { Credentials } from './listing.js';

/** Refresh assumed-role credentials this long before they expire. */
const REFRESH_MARGIN_MS = 5 * 60_000;
const assumed = new Map<string, { credentials: Credentials; expires: number }>();

/**
 * The keys an object-storage source reads with: its access key (IAM_USER), temporary keys of a
 * role assumed through STS with this node's own AWS credentials (IAM_ROLE, from the SDK's default
 * chain: environment, shared files, instance or container role), or none for a public bucket.
 */
export async function storageCredentials(source: {
  authentication?: string;
  iamRole?: string;
  accessKey?: Credentials;
}): Promise<Credentials | undefined> {
  if (source.authentication === 'IAM_ROLE' && source.iamRole) return assumeRole(source.iamRole);
  return source.accessKey;
}

async function assumeRole(roleArn: string): Promise<Credentials> {
  const cached = assumed.get(roleArn);
  if (cached && cached.expires - REFRESH_MARGIN_MS > Date.now()) return cached.credentials;
  const provider = fromTemporaryCredentials({
    params: { RoleArn: roleArn, RoleSessionName: 'sluice', DurationSeconds: 3600 },
    clientConfig: { region: process.env.AWS_REGION ?? 'us-east-1' },
  });
  const identity = await provider();
  const credentials: Credentials = {
    accessKeyId: identity.accessKeyId,
    secretKey: identity.secretAccessKey,
    ...(identity.sessionToken ? { sessionToken: identity.sessionToken } : {}),
  };
  assumed.set(roleArn, { credentials, expires: identity.expiration?.getTime() ?? Date.now() + 3_600_000 });
  return credentials;
}
