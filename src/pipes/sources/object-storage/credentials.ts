import { assumeRole } from '../aws/index.js';
import type { Credentials } from './listing.js';

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

/** Takes credentials out of a text: the SQL the engine echoes in its errors carries them. */
export function withoutCredentials(text: string, credentials: Credentials | undefined): string {
  if (!credentials) return text;
  return [credentials.secretKey, credentials.sessionToken, credentials.accessKeyId]
    .filter((value): value is string => typeof value === 'string' && value.length >= 4)
    .reduce((out, value) => out.split(value).join('[redacted]'), text);
}
