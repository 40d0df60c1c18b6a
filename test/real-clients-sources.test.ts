import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningAzurite, startAzurite } from './support/azurite.js';
import { fixture } from './support/clients.js';
import { type RunningKafka, startKafka } from './support/kafka.js';
import { kafkaPipe, produce } from './support/kafka-pipes.js';
import { sql, waitForState } from './support/runtime.js';
import { startSluice, type TestSluice } from './support/sluice.js';
import { type StandInSts, startStandInSts } from './support/sts.js';
import { waitFor } from './support/wait.js';

/**
 * Real clients against real sources: the cloud CLI's Azure body (its `--source-url` is required, so
 * `url` always comes beside the connection string, container and path) on azurite, and the
 * Terraform provider's Kafka update (internal/service/clickhouse/resource/clickpipe.go, Update:
 * the immutable fields dropped, `authentication`, `iamRole` and `caCertificate` sent) on a real
 * broker, with a stand-in STS (mocked: STS cannot run here; test/support/sts.ts).
 */
describe('what real clients send to real sources', () => {
  let s: TestSluice;
  let azure: RunningAzurite;
  let kafka: RunningKafka;
  let sts: StandInSts;
  const saved = { ...process.env };

  beforeAll(async () => {
    [azure, kafka] = await Promise.all([startAzurite(['events']), startKafka()]);
    // The role's temporary keys, which the broker's MSK stand-in accepts only with their session token.
    sts = await startStandInSts(kafka.mskIam.role);
    Object.assign(process.env, sts.environment(kafka.mskIam.region));
    // The test broker is 127.0.0.1: MSK IAM tokens are signed for the node's region.
    s = await startSluice({ runtime: true, env: { AWS_REGION: kafka.mskIam.region } });
  }, 600_000);
  afterAll(async () => {
    process.env = saved;
    await s?.close();
    await sts?.close();
    await Promise.all([azure?.stop(), kafka?.stop()]);
  });

  /** The cloud CLI's Azure body, on this azurite. */
  async function azureBody(url?: (endpoint: string) => string) {
    const body = await fixture('cli-azure-url');
    const storage = body.source.objectStorage;
    const endpoint = /BlobEndpoint=([^;]+)/.exec(azure.connectionString)?.[1] as string;
    storage.connectionString = azure.connectionString;
    storage.url = url ? url(endpoint) : storage.url.replace('AZURE_BLOB_ENDPOINT', endpoint);
    return body;
  }

  it('an Azure pipe with a url naming its container and path is created and reads; one that contradicts them is a 400', async () => {
    await azure.put('events', 'data/a.ndjson', '{"id": 1, "name": "one"}\n{"id": 2, "name": "two"}\n');
    const body = await azureBody();
    const created = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(created.statusCode, created.body).toBe(200);
    expect(created.json.result.source.objectStorage.url).toBe(body.source.objectStorage.url);
    expect(created.body).not.toContain('AccountKey');
    await waitForState(s, created.json.result.id, 'Completed');
    expect(await sql(s, 'SELECT id, name FROM default.azure_events ORDER BY id')).toEqual([
      { id: 1, name: 'one' },
      { id: 2, name: 'two' },
    ]);
    const container = await azureBody((endpoint) => `${endpoint}/other/data/*.ndjson`);
    container.destination.table = 'azure_other';
    const refused = await s.request({ method: 'POST', url: s.pipesUrl, body: container });
    expect(refused.statusCode).toBe(400);
    expect(refused.json.error).toContain(
      'source.objectStorage.url: names /devstoreaccount1/other/data/*.ndjson, but azureContainerName and path say /events/data/*.ndjson',
    );
    expect(refused.json.code).toBe('SLUICE_ERR_VALIDATION');
    const account = await azureBody(() => 'https://someone.blob.core.windows.net/events/data/*.ndjson');
    account.destination.table = 'azure_account';
    const elsewhere = await s.request({ method: 'POST', url: s.pipesUrl, body: account });
    expect(elsewhere.statusCode).toBe(400);
    expect(elsewhere.json.error).toContain(
      'source.objectStorage.url: names the host someone.blob.core.windows.net, but connectionString reaches 127.0.0.1',
    );
    expect(elsewhere.json.code).toBe('SLUICE_ERR_VALIDATION');
    const names = (await s.request({ method: 'GET', url: s.pipesUrl })).json.result.map(
      (pipe: { name: string }) => pipe.name,
    );
    expect(names).toEqual(['azure events']);
  });

  it('a Kafka update to an IAM role STS refuses is a 400 naming iamRole; the pipe reads on with its role', async () => {
    await kafka.createTopic('orders', 1);
    const rows = (from: number) =>
      Array.from({ length: 10 }, (_, i) => ({
        topic: 'orders',
        value: JSON.stringify({ id: from + i, name: `n${from + i}` }),
      }));
    await produce(kafka.connection('plaintext'), rows(0));
    const reader = 'arn:aws:iam::123456789012:role/reader';
    const body = kafkaPipe('orders', {
      authentication: 'IAM_ROLE',
      iamRole: reader,
      brokers: kafka.bootstrap.saslSsl,
      topics: 'orders',
      caCertificate: kafka.caPem,
    });
    const created = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(created.statusCode, created.body).toBe(200);
    const id = created.json.result.id;
    await waitForState(s, id, 'Running');
    const update = await fixture('terraform-kafka-iam-role-update');
    update.source.kafka.caCertificate = kafka.caPem;
    const refused = await s.request({ method: 'PATCH', url: `${s.pipesUrl}/${id}`, body: update });
    expect(refused.statusCode, refused.body).toBe(400);
    expect(refused.json.error).toContain('source.kafka.iamRole: cannot assume iamRole');
    expect(refused.json.error).toContain('(AccessDenied)');
    expect(refused.json.code).toBe('SLUICE_ERR_VALIDATION');
    const after = await s.request({ method: 'GET', url: `${s.pipesUrl}/${id}` });
    expect(after.json.result.source.kafka.iamRole).toBe(reader);
    expect(after.json.result.state).toBe('Running');
    await produce(kafka.connection('plaintext'), rows(10));
    await waitFor('20 rows', async () => {
      const [row] = await sql(s, 'SELECT count() AS n FROM kafka.orders');
      return Number(row?.n) === 20 ? row : undefined;
    });
    // A role it may assume is taken: the update is checked, then applied.
    update.source.kafka.iamRole = 'arn:aws:iam::210987654321:role/reader';
    const taken = await s.request({ method: 'PATCH', url: `${s.pipesUrl}/${id}`, body: update });
    expect(taken.statusCode, taken.body).toBe(200);
    expect(sts.assumed).toContain(`arn:aws:iam::210987654321:role/reader for ${s.organizationId}`);
  });
});
