import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AZURITE_KEY, type RunningAzurite } from './support/azurite.js';
import {
  azurePipe,
  kafkaPipe,
  kinesisPipe,
  objectStoragePipe,
  postgresPipe,
  sourcesForSampleBodies,
} from './support/pipes.js';
import { startSluice, type TestSluice } from './support/sluice.js';

const RECORD_KEYS = [
  'id',
  'serviceId',
  'name',
  'state',
  'scaling',
  'source',
  'destination',
  'fieldMappings',
  'settings',
  'createdAt',
  'updatedAt',
];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The request as the record must echo it: secrets, validateSamples and roles gone, defaults in. */
function expectedEcho(body: any, defaults: (copy: any) => void) {
  const copy = structuredClone(body);
  delete copy.source.validateSamples;
  const kind = Object.keys(copy.source)[0] as string;
  const source = copy.source[kind];
  for (const secret of ['credentials', 'accessKey', 'connectionString', 'serviceAccountKey'])
    delete source[secret];
  if (source.schemaRegistry) delete source.schemaRegistry.credentials;
  delete copy.destination.roles;
  copy.scaling ??= { replicas: 1 };
  copy.settings ??= {};
  defaults(copy);
  return copy;
}

describe('create pipe: the exact shape of the response (README, "Pipes")', () => {
  let s: TestSluice;
  let azurite: RunningAzurite;
  beforeAll(async () => {
    s = await startSluice({ runtime: false });
    // Create checks run against real sources (test/support/pipes.ts).
    azurite = await sourcesForSampleBodies(s);
  });
  afterAll(async () => {
    await azurite?.stop();
    await s.close();
  });

  const cases: [string, () => any, (copy: any) => void][] = [
    ['objectStorage (s3)', objectStoragePipe, () => {}],
    [
      'objectStorage (azure)',
      () => azurePipe(azurite.connectionString),
      (copy) => {
        copy.destination.database = 'default';
        copy.destination.managedTable = true;
      },
    ],
    ['kafka', kafkaPipe, (copy) => (copy.destination.database = 'default')],
    ['kinesis', kinesisPipe, (copy) => (copy.destination.database = 'default')],
    ['postgres', postgresPipe, (copy) => (copy.fieldMappings = [])],
  ];

  it.each(cases)('%s: 200 envelope, secrets gone, everything else echoed', async (_name, make, defaults) => {
    const body = make();
    const response = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(response.statusCode).toBe(200);
    expect(Object.keys(response.json).sort()).toEqual(['requestId', 'result', 'status']);
    expect(response.json.status).toBe(200);
    expect(response.json.requestId).toMatch(UUID);
    expect(response.headers['x-request-id']).toBe(response.json.requestId);
    const record = response.json.result;
    expect(Object.keys(record)).toEqual(RECORD_KEYS);
    expect(record.id).toMatch(UUID);
    expect(record.serviceId).toBe(s.serviceId);
    expect(record.state).toBe('Provisioning');
    expect(record.createdAt).toMatch(ISO_MS_UTC);
    expect(record.updatedAt).toBe(record.createdAt);
    const { id, serviceId, state, createdAt, updatedAt, ...echoed } = record;
    expect(echoed).toEqual(expectedEcho(body, defaults));
    expect(response.body).not.toMatch(/SECRET-never-returned|validateSamples|roles/);
    expect(response.body).not.toContain(AZURITE_KEY);

    const read = await s.request({ method: 'GET', url: `${s.pipesUrl}/${id}` });
    expect(read.statusCode).toBe(200);
    // The runtime runs: the state (and its time) may have moved on since create.
    const { state: _now, updatedAt: _changed, ...kept } = read.json.result;
    const { state: _then, updatedAt: _created, ...sent } = record;
    expect(kept).toEqual(sent);
  });

  it('fills the documented defaults (consumer group, postgres settings); absent mappings stay absent', async () => {
    const kafka = kafkaPipe();
    delete (kafka.source.kafka as any).consumerGroup;
    delete (kafka as any).fieldMappings;
    const created = (await s.request({ method: 'POST', url: s.pipesUrl, body: kafka })).json.result;
    expect(created.source.kafka.consumerGroup).toBe(`pipes-${created.id}`);
    // Terraform compares what it reads back with what it sent: no mappings sent, none returned
    // (the pipe still maps each column from the field of its name: README, "Pipes", the record answered as sent).
    expect(created.fieldMappings).toEqual([]);

    const postgres = postgresPipe();
    delete (postgres.source.postgres as any).settings;
    delete (postgres.source.postgres.tableMappings[0] as any).sourceSchemaName;
    const pg = (await s.request({ method: 'POST', url: s.pipesUrl, body: postgres })).json.result;
    expect(pg.source.postgres.settings).toEqual({
      syncIntervalSeconds: 60,
      pullBatchSize: 100000,
      snapshotNumRowsPerPartition: 100000,
      initialLoadParallelism: 4,
      snapshotNumberOfParallelTables: 1,
      replicationMode: 'cdc',
    });
    expect(pg.source.postgres.tableMappings[0].sourceSchemaName).toBe('public');
  });

  it('lists the pipes of the service in creation order', async () => {
    const list = await s.request({ method: 'GET', url: s.pipesUrl });
    expect(list.statusCode).toBe(200);
    expect(list.json.status).toBe(200);
    const names = list.json.result.map((p: any) => p.name);
    expect(names.slice(0, 5)).toEqual([
      'events from s3',
      'azure blobs',
      'orders from kafka',
      'clicks from kinesis',
      'app database',
    ]);
    expect(list.body).not.toMatch(/SECRET-never-returned/);
  });
});
