import { CodedError } from '../../../errors.js';
/** AWS keys: an access key, or the temporary keys of an assumed role (with their session token). */
export interface AwsKeys {
  accessKeyId: string;
  secretKey: string;
  sessionToken?: string;
}

/** Refresh assumed-role credentials this long before they expire. */
const REFRESH_MARGIN_MS = 5 * 60_000;
const assumed = new Map<string, { credentials: AwsKeys; expires: number }>();

/**
 * Temporary keys of `roleArn`, assumed through STS with this node's own AWS credentials (the
 * SDK's default chain: environment, shared files, instance or container role); kept until five
 * minutes before they expire. The organization's id goes as the ExternalId of the AssumeRole
 * call: a role's trust policy that requires it can be assumed only for that organization,
 * whichever other organizations know its ARN.
 */
export async function assumeRole(roleArn: string, organizationId: string): Promise<AwsKeys> {
  const key = `${roleArn}\n${organizationId}`;
  const cached = assumed.get(key);
  if (cached && cached.expires - REFRESH_MARGIN_MS > Date.now()) return cached.credentials;
  // Loaded on first use: most nodes never assume a role.
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
  let identity: Awaited<ReturnType<typeof provider>>;
  try {
    identity = await provider();
  } catch (error) {
    // STS's own message names this node's identity (its account and role): a tenant sees the code.
    const code = (error as { name?: string }).name ?? 'an error';
    throw new CodedError(
      'SLUICE_ERR_SOURCE_ROLE_REFUSED',
      `STS refused to assume ${roleArn} (${code}): check the role's trust policy and ExternalId`,
    );
  }
  const credentials: AwsKeys = {
    accessKeyId: identity.accessKeyId,
    secretKey: identity.secretAccessKey,
    ...(identity.sessionToken ? { sessionToken: identity.sessionToken } : {}),
  };
  assumed.set(key, { credentials, expires: identity.expiration?.getTime() ?? Date.now() + 3_600_000 });
  return credentials;
}
