import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

// AWS STS cannot run here: a local stand-in answers AssumeRole in STS's own XML, reached by the
// real SDK through the standard AWS_ENDPOINT_URL_STS variable (set by `environment()`).

export interface StandInSts {
  /** `RoleArn for ExternalId` of every AssumeRole asked. */
  assumed: string[];
  /** What the real SDK needs to reach it with the node's own (made-up) credentials. */
  environment(region: string): Record<string, string>;
  close(): Promise<void>;
}

/**
 * Roles ending in `:role/reader` may be assumed and get `keys` as their temporary credentials
 * (with a session token); any other role is AccessDenied.
 */
export async function startStandInSts(keys: {
  accessKeyId: string;
  secretKey: string;
  sessionToken?: string;
}): Promise<StandInSts> {
  const assumed: string[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => {
      body += chunk;
    });
    request.on('end', () => {
      const params = new URLSearchParams(body);
      const role = params.get('RoleArn') ?? '';
      assumed.push(`${role} for ${params.get('ExternalId')}`);
      if (!role.endsWith(':role/reader')) {
        response.writeHead(403, { 'content-type': 'text/xml' });
        response.end(
          '<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>not allowed to assume this role</Message></Error><RequestId>1</RequestId></ErrorResponse>',
        );
        return;
      }
      response.writeHead(200, { 'content-type': 'text/xml' });
      response.end(`<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>
          <Credentials><AccessKeyId>${keys.accessKeyId}</AccessKeyId><SecretAccessKey>${keys.secretKey}</SecretAccessKey>
          <SessionToken>${keys.sessionToken ?? 'temporary-session-token'}</SessionToken><Expiration>${new Date(Date.now() + 3600_000).toISOString()}</Expiration></Credentials>
          <AssumedRoleUser><Arn>${role}/sluice</Arn><AssumedRoleId>AROA:sluice</AssumedRoleId></AssumedRoleUser>
          </AssumeRoleResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></AssumeRoleResponse>`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    assumed,
    environment: (region) => ({
      AWS_ENDPOINT_URL_STS: `http://127.0.0.1:${port}`,
      AWS_ACCESS_KEY_ID: 'node-own-key',
      AWS_SECRET_ACCESS_KEY: 'node-own-secret',
      AWS_REGION: region,
    }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
