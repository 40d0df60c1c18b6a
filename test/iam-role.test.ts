import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_ROWS, FixtureWriter } from './support/fixtures.js';
import { createPipe, sql, waitForState } from './support/runtime.js';
import { type RunningS3, startS3 } from './support/s3.js';
import { startSluice, type TestSluice } from './support/sluice.js';
import { type StandInSts, startStandInSts } from './support/sts.js';

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
    // STS's own message would name this node's account and role: a tenant sees only the code.
    expect(response.json.error).not.toContain('not allowed to assume this role');
  });
});
