import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_ROWS, FixtureWriter } from './support/fixtures.js';
import { createPipe, sql, waitForState } from './support/runtime.js';
import { type RunningS3, startS3 } from './support/s3.js';
import { startSluice, type TestSluice } from './support/sluice.js';

/**
 * AWS STS cannot run here, so a local stand-in answers AssumeRole in STS's own XML, reached by the
 * real SDK through the standard AWS_ENDPOINT_URL_STS variable; everything after it is real: the
 * temporary keys and session token list s3rver and are handed to the engine's s3() function.
 */
describe('IAM_ROLE object storage, with a stand-in STS (mocked: STS cannot run here)', () => {
  let sts: Server;
  const assumed: string[] = [];
  let s: TestSluice;
  let s3: RunningS3;
  let fixtures: FixtureWriter;
  const saved = { ...process.env };

  beforeAll(async () => {
    sts = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
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
          <Credentials><AccessKeyId>S3RVER</AccessKeyId><SecretAccessKey>S3RVER</SecretAccessKey>
          <SessionToken>temporary-session-token</SessionToken><Expiration>${new Date(Date.now() + 3600_000).toISOString()}</Expiration></Credentials>
          <AssumedRoleUser><Arn>${role}/sluice</Arn><AssumedRoleId>AROA:sluice</AssumedRoleId></AssumedRoleUser>
          </AssumeRoleResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></AssumeRoleResponse>`);
      });
    });
    await new Promise<void>((resolve) => sts.listen(0, '127.0.0.1', resolve));
    const address = sts.address();
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_STS: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
      AWS_ACCESS_KEY_ID: 'node-own-key',
      AWS_SECRET_ACCESS_KEY: 'node-own-secret',
      AWS_REGION: 'us-east-1',
    });
    [s, s3, fixtures] = await Promise.all([
      startSluice({ runtime: true }),
      startS3(['secure']),
      FixtureWriter.open(),
    ]);
    await s3.put('secure', 'data/f.ndjson', await fixtures.write('f.ndjson', 'JSONEachRow'));
  });
  afterAll(async () => {
    process.env = saved;
    sts?.close();
    await Promise.all([s?.close(), s3?.stop(), fixtures?.close()]);
  });

  const pipe = (role: string, table = 'by_role') => ({
    name: 'by role',
    source: {
      objectStorage: {
        format: 'JSONEachRow',
        url: `${s3.endpoint}/secure/data/*.ndjson`,
        authentication: 'IAM_ROLE',
        iamRole: role,
      },
    },
    destination: {
      table,
      tableDefinition: { engine: { type: 'MergeTree' } },
      columns: [{ name: 'id', type: 'UInt64' }],
    },
  });

  it('assumes the role with the node’s own credentials and reads with the temporary keys', async () => {
    const id = await createPipe(s, pipe('arn:aws:iam::123456789012:role/reader'));
    await waitForState(s, id, 'Completed');
    expect(await sql(s, 'SELECT count() AS n FROM default.by_role')).toEqual([{ n: FIXTURE_ROWS }]);
    // The organization's id is the ExternalId: a role can demand it in its trust policy.
    expect(assumed).toContain(`arn:aws:iam::123456789012:role/reader for ${s.organizationId}`);
  });

  it('a role it may not assume is a 400 at create', async () => {
    const response = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: pipe('arn:aws:iam::123456789012:role/admin', 'refused'),
    });
    expect(response.statusCode).toBe(400);
    expect(response.json.error).toContain('source.objectStorage.url: cannot list or read the files');
    expect(response.json.error, response.json.error).toContain('not allowed to assume this role');
  });
});
