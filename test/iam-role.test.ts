import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_ROWS, FixtureWriter } from './support/fixtures.js';
import {
  type RunningKinesis,
  startKinesis,
  startThrottlingProxy,
  type ThrottlingProxy,
} from './support/kinesis.js';
import { kinesisBody, records } from './support/kinesis-pipes.js';
import { createPipe, sql, waitForState } from './support/runtime.js';
import { type RunningS3, startS3 } from './support/s3.js';
import { startSluice, type TestSluice } from './support/sluice.js';
import { type StandInSts, startStandInSts } from './support/sts.js';
import { waitFor } from './support/wait.js';

/**
 * AWS STS cannot run here, so a local stand-in (test/support/sts.ts) answers AssumeRole, reached by
 * the real SDK through the standard AWS_ENDPOINT_URL_STS variable; everything after it is real: the
 * temporary keys and session token list s3rver and are handed to the engine's s3() function.
 */
describe('IAM_ROLE object storage, with a stand-in STS (mocked: STS cannot run here)', () => {
  let sts: StandInSts;
  let s: TestSluice;
  let s3: RunningS3;
  let fixtures: FixtureWriter;
  const saved = { ...process.env };

  beforeAll(async () => {
    // The role's temporary keys are s3rver's own, so the read really needs them.
    sts = await startStandInSts({ accessKeyId: 'S3RVER', secretKey: 'S3RVER' });
    Object.assign(process.env, sts.environment('us-east-1'));
    [s, s3, fixtures] = await Promise.all([
      startSluice({ runtime: true }),
      startS3(['secure']),
      FixtureWriter.open(),
    ]);
    await s3.put('secure', 'data/f.ndjson', await fixtures.write('f.ndjson', 'JSONEachRow'));
  });
  afterAll(async () => {
    process.env = saved;
    await sts?.close();
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
    expect(sts.assumed).toContain(`arn:aws:iam::123456789012:role/reader for ${s.organizationId}`);
  });

  it('a role it may not assume is a 400 at create', async () => {
    const response = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: pipe('arn:aws:iam::123456789012:role/admin', 'refused'),
    });
    expect(response.statusCode).toBe(400);
    expect(response.json.error).toContain('source.objectStorage.url: cannot list or read the files');
    expect(response.json.error, response.json.error).toContain('(AccessDenied)');
    expect(response.json.code).toBe('SLUICE_ERR_VALIDATION');
    // STS's own message would name this node's account and role: a tenant sees only the code.
    expect(response.json.error).not.toContain('not allowed to assume this role');
  });
});

/**
 * The same stand-in STS (mocked: STS cannot run here) for a Kinesis pipe on kinesalite. kinesalite
 * never checks signatures, so the test's proxy in front of it reads which keys signed each call.
 */
describe('IAM_ROLE Kinesis, with a stand-in STS (mocked: STS cannot run here)', () => {
  let sts: StandInSts;
  let s: TestSluice;
  let kinesis: RunningKinesis;
  let proxy: ThrottlingProxy;
  const saved = { ...process.env };
  const signedWith = new Set<string>();

  beforeAll(async () => {
    sts = await startStandInSts({
      accessKeyId: 'ASIAROLEKEY',
      secretKey: 'role-secret',
      sessionToken: 'role-token',
    });
    kinesis = await startKinesis();
    proxy = await startThrottlingProxy(kinesis.endpoint, (_target, _body, headers) => {
      const key = /Credential=([^/]+)\//.exec(String(headers.authorization))?.[1];
      signedWith.add(`${key} ${headers['x-amz-security-token'] ?? 'no token'}`);
      return false;
    });
    Object.assign(process.env, sts.environment('us-east-1'), { AWS_ENDPOINT_URL_KINESIS: proxy.endpoint });
    s = await startSluice({ runtime: true });
    await kinesis.createStream('by-role', 1);
  });
  afterAll(async () => {
    process.env = saved;
    await s?.close();
    await proxy?.stop();
    await kinesis?.stop();
    await sts?.close();
  });

  const pipe = (role: string) =>
    kinesisBody('by_role', {
      streamName: 'by-role',
      authentication: 'IAM_ROLE',
      iamRole: role,
      accessKey: undefined,
    });

  it("assumes the role with the node's own credentials and reads with the temporary keys", async () => {
    await kinesis.put('by-role', records(0, 50));
    const id = await createPipe(s, pipe('arn:aws:iam::123456789012:role/reader'));
    await waitForState(s, id, 'Running');
    await waitFor(
      'every record',
      async () => (await sql(s, 'SELECT count() AS n FROM kinesis.by_role'))[0]?.n === 50,
    );
    expect(sts.assumed).toContain(`arn:aws:iam::123456789012:role/reader for ${s.organizationId}`);
    expect([...signedWith]).toEqual(['ASIAROLEKEY role-token']);
  });

  it('a role it may not assume is a 400 at create naming iamRole', async () => {
    const response = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: { ...pipe('arn:aws:iam::123456789012:role/admin'), name: 'refused' },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json.error).toContain('source.kinesis.iamRole: STS refused to assume');
    expect(response.json.error).toContain('(AccessDenied)');
    expect(response.json.code).toBe('SLUICE_ERR_VALIDATION');
    expect(response.json.error).not.toContain('not allowed to assume this role');
  });
});
