import type { ErrorCode } from '../../../errors.js';
import { PermanentError } from '../../records/index.js';
import { assumeRole } from '../aws/index.js';
import type { Broker, KafkaConfig } from './connection.js';

/** The pipe's role could not be assumed for MSK IAM (found through the client's error causes). */
export const ROLE_REFUSED = 'SLUICE_ERR_MSK_IAM_ROLE' satisfies ErrorCode;

class RoleRefusedError extends Error {
  readonly code: ErrorCode = ROLE_REFUSED;
}

/** MSK's broker names end in kafka.<region>.amazonaws.com (kafka-serverless for serverless). */
const MSK_HOST = /\.kafka(?:-serverless)?\.([a-z0-9-]+)\.amazonaws\.com$/i;

/**
 * The SASL OAUTHBEARER token provider of MSK IAM access: AWS's own signer makes each token (a
 * SigV4-presigned kafka-cluster:Connect request, valid 15 minutes) from the pipe's access key
 * (IAM_USER) or the temporary keys of its role, assumed through STS with this node's credentials
 * (IAM_ROLE). Asked on every connection, so a reconnection gets a fresh token.
 */
export function mskTokenProvider(
  source: KafkaConfig,
  brokers: Broker[],
  context: { organizationId: string; awsRegion: string | undefined },
): () => Promise<string> {
  const region = mskRegion(brokers, context.awsRegion);
  const organizationId = context.organizationId;
  const authentication = source.authentication;
  const credentials = source.credentials ?? {};
  return async () => {
    const keys =
      authentication === 'IAM_ROLE' && source.iamRole
        ? await assumeRole(source.iamRole, organizationId).catch((error: unknown) => {
            throw new RoleRefusedError(`cannot assume iamRole: ${(error as Error).message}`);
          })
        : { accessKeyId: credentials.accessKeyId ?? '', secretKey: credentials.secretKey ?? '' };
    // Loaded on first use, like the other AWS SDK pieces: most nodes never sign an MSK token.
    const { generateAuthTokenFromCredentialsProvider } = await import('aws-msk-iam-sasl-signer-js');
    const { token } = await generateAuthTokenFromCredentialsProvider({
      region,
      awsCredentialsProvider: async () => ({
        accessKeyId: keys.accessKeyId,
        secretAccessKey: keys.secretKey,
        ...(keys.sessionToken ? { sessionToken: keys.sessionToken } : {}),
      }),
    });
    return token;
  };
}

/** The region the tokens are signed for: the brokers' names say it, else this node's AWS_REGION. */
function mskRegion(brokers: Broker[], nodeRegion: string | undefined): string {
  for (const broker of brokers) {
    const match = MSK_HOST.exec(broker.host);
    if (match?.[1]) return match[1].toLowerCase();
  }
  if (nodeRegion) return nodeRegion;
  throw new PermanentError(
    'SLUICE_ERR_SOURCE_CONFIG',
    'cannot tell the AWS region for MSK IAM: the brokers are not named *.kafka.<region>.amazonaws.com and AWS_REGION is not set',
  );
}
