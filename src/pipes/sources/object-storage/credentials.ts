import type { Credentials } from './listing.js';

/** Refresh assumed-role credentials this long before they expire. */
const REFRESH_MARGIN_MS = 5 * 60_000;
const assumed = new Map<string, { credentials: Credentials; expires: number }>();

/**
 * The keys an object-storage source reads with: its access key (IAM_USER), temporary keys of a
 * role assumed through STS with this node's own AWS credentials (IAM_ROLE, from the SDK's default
 * chain: environment, shared files, instance or container role), or none for a public bucket.
 */
export async function storageCredentials(
  source: { authentication?: string; iamRole?: string; accessKey?: Credentials },
  organizationId: string,
): Promise<Credentials | undefined> {
  if (source.authentication === 'IAM_ROLE' && source.iamRole)
    return assumeRole(source.iamRole, organizationId);
  return source.accessKey;
}

/**
 * The organization's id goes as the ExternalId of the AssumeRole call: a role's trust policy that
 * requires it can be assumed only for that organization, whichever other organizations know its ARN.
 */
async function assumeRole(roleArn: string, organizationId: string): Promise<Credentials> {
  const key = `${roleArn}\n${organizationId}`;
  const cached = assumed.get(key);
  if (cached && cached.expires - REFRESH_MARGIN_MS > Date.now()) return cached.credentials;
  // Loaded on first use, like the storage SDKs (listing.ts).
  const { fromTemporaryCredentials } = await import('@aws-sdk/credential-providers');
  const provider = fromTemporaryCredentials({
    params: {
      RoleArn: roleArn,
      RoleSessionName: 'sluice',
      DurationSeconds: 3600,
      ExternalId: organizationId,
    },
    clientConfig: { region: process.env.AWS_REGION ?? 'us-east-1' },
  });
  const identity = await provider();
  const credentials: Credentials = {
    accessKeyId: identity.accessKeyId,
    secretKey: identity.secretAccessKey,
    ...(identity.sessionToken ? { sessionToken: identity.sessionToken } : {}),
  };
  assumed.set(key, { credentials, expires: identity.expiration?.getTime() ?? Date.now() + 3_600_000 });
  return credentials;
}

/** Takes credentials out of a text: the SQL the engine echoes in its errors carries them. */
export function withoutCredentials(text: string, credentials: Credentials | undefined): string {
  if (!credentials) return text;
  return [credentials.secretKey, credentials.sessionToken, credentials.accessKeyId]
    .filter((value): value is string => typeof value === 'string' && value.length >= 4)
    .reduce((out, value) => out.split(value).join('[redacted]'), text);
}
