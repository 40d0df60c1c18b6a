import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { createSluice } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { objectStoragePipe } from '../test/support/pipes.js';
import { profiled } from './profile.js';
import { type InterleavedResult, interleaved, load, printTable } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
/** Slices of each request, taken in turn with its bare route's (support.ts interleaved). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONNECTIONS = 10;
const TOKEN = 'slt_bench-token-0123456789abcdef';

/** A table, a source, a dashboard with a tile, a webhook and an alert, made through the API. */
async function makeAlert(
  base: string,
  queryUrl: string,
  basicHeaders: Record<string, string>,
): Promise<string> {
  for (const sql of [
    'CREATE DATABASE IF NOT EXISTS app',
    'CREATE TABLE IF NOT EXISTS app.requests (ts DateTime, status UInt16) ENGINE = MergeTree ORDER BY ts',
  ]) {
    await fetch(queryUrl, { method: 'POST', headers: basicHeaders, body: JSON.stringify({ sql }) });
  }
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${base}/api/v2/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await response.json()) as {
      data: { id: string; tiles?: { id: string }[] };
      message?: string;
    };
    if (!response.ok) throw new Error(`${path}: ${json.message}`);
    return json.data;
  };
  const serviceId = new URL(queryUrl).pathname.split('/')[5];
  const source = await post('sources', {
    name: 'requests',
    kind: 'log',
    serviceId,
    from: { databaseName: 'app', tableName: 'requests' },
    timestampValueExpression: 'ts',
  });
  const dashboard = await post('dashboards', {
    name: 'health',
    tiles: [
      {
        name: 'errors',
        x: 0,
        y: 0,
        w: 4,
        h: 4,
        config: { displayType: 'number', sourceId: source.id, select: [{ aggFn: 'count' }] },
      },
    ],
  });
  const webhook = await post('webhooks', { name: 'hook', url: 'http://127.0.0.1:9/hook' });
  const alert = await post('alerts', {
    threshold: 1,
    interval: '1m',
    thresholdType: 'above',
    source: 'tile',
    dashboardId: dashboard.id,
    tileId: dashboard.tiles?.[0]?.id,
    channel: { type: 'webhook', webhookId: webhook.id },
  });
  return alert.id;
}

function must(result: InterleavedResult | undefined): InterleavedResult {
  if (!result) throw new Error('a target was not measured');
  return result;
}

/**
 * Requests per second of create-pipe and get-pipe against a bare Fastify route that returns a
 * constant, both served by this process and driven the same way, so the ratio is Sluice's overhead
 * (auth, validation, store, serialization) on this machine.
 */
export async function benchApi(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-'));
  const keyId = 'sk_bench';
  const keySecret = 'bench-secret-0123456789';
  const sluice = await createSluice(
    loadConfig({
      SLUICE_DATA_DIR: dataDir,
      SLUICE_PORT: '0',
      SLUICE_RATE_LIMIT: '0',
      SLUICE_BOOTSTRAP_KEY_ID: keyId,
      SLUICE_BOOTSTRAP_KEY_SECRET: keySecret,
      SLUICE_BOOTSTRAP_ACCESS_TOKEN: TOKEN,
      SLUICE_ALLOW_PRIVATE_WEBHOOKS: 'true',
    }),
    // The control plane alone: with the runtime on, every created pipe would also start a worker
    // and check its source over the network, which is not what this compares.
    { logger: createLogger('warn'), runtime: false },
  );
  const bare = Fastify();
  bare.post('/bare', async () => ({ status: 200, result: 'constant' }));
  bare.get('/bare', async () => ({ status: 200, result: 'constant' }));
  try {
    const base = await sluice.listen();
    const bareBase = await bare.listen({ host: '127.0.0.1', port: 0 });
    const organization = (await sluice.identity.listOrganizations({ organizationId: '', operator: true }))[0];
    const service = (await sluice.identity.listServices(organization?.id ?? ''))[0];
    const pipes = `${base}/v1/organizations/${organization?.id}/services/${service?.id}/pipes`;
    const headers = {
      authorization: `Basic ${Buffer.from(`${keyId}:${keySecret}`).toString('base64')}`,
      'content-type': 'application/json',
    };
    const body = JSON.stringify(objectStoragePipe());
    const one = await fetch(pipes, { method: 'POST', headers, body });
    const pipeId = ((await one.json()) as { result: { id: string } }).result.id;

    const alertUrl = `${base}/api/v2/alerts/${await makeAlert(base, pipes.replace(/\/pipes$/, '/query'), headers)}`;
    const bearer = { authorization: `Bearer ${TOKEN}` };

    const getPipeTarget = { url: `${pipes}/${pipeId}`, headers, connections: CONNECTIONS };
    const getAlertTarget = { url: alertUrl, headers: bearer, connections: CONNECTIONS };
    const createTarget = { url: pipes, method: 'POST' as const, body, headers, connections: CONNECTIONS };
    // Each request and its bare route in turn, a slice at a time (support.ts interleaved), so the
    // ratio compares them on the same machine. CPU figures are the slices' (support.ts): the server
    // and autocannon share this process, so its cores and event loop are both sides of every request.
    const rounds = { seconds: SECONDS, rounds: ROUNDS };
    const gets = await interleaved(
      {
        bare: { url: `${bareBase}/bare`, connections: CONNECTIONS },
        pipe: getPipeTarget,
        alert: getAlertTarget,
      },
      rounds,
    );
    const posts = await interleaved(
      {
        bare: { url: `${bareBase}/bare`, method: 'POST', body, headers, connections: CONNECTIONS },
        create: createTarget,
      },
      rounds,
    );
    // With BENCH_PROFILE, one more run of each of Sluice's requests under the profiler (profile.ts):
    // where this process's CPU went, apart from the measured slices the profiler would slow.
    if (process.env.BENCH_PROFILE) {
      for (const [label, target] of [
        ['api-get-pipe', getPipeTarget],
        ['api-get-alert', getAlertTarget],
        ['api-create-pipe', createTarget],
      ] as const) {
        await profiled(label, () => load({ ...target, seconds: SECONDS }));
      }
    }
    const [bareGet, getPipe, getAlert, barePost, createPipe] = [
      must(gets.bare),
      must(gets.pipe),
      must(gets.alert),
      must(posts.bare),
      must(posts.create),
    ];
    const row = (name: string, r: typeof bareGet, baseline: typeof bareGet, goal?: number) => {
      const ratio = r.requestsPerSecond / baseline.requestsPerSecond;
      return {
        request: name,
        'req/s': Math.round(r.requestsPerSecond),
        'p99 ms': r.p99Ms,
        'non-2xx': r.non2xx,
        'ratio vs bare': ratio.toFixed(2),
        'goal (issue #39)': goal === undefined ? '' : `>= ${goal} ${ratio >= goal ? 'met' : 'not met'}`,
        'process cores': r.cpu.processCores,
        'event loop': r.cpu.eventLoop,
        'machine busy': r.cpu.machineBusy,
      };
    };
    printTable(
      `API throughput (${SECONDS} s each in ${ROUNDS} slices taken in turn with the bare route's, ${CONNECTIONS} connections, metadata in PGlite, control plane only)`,
      [
        row('bare Fastify GET', bareGet, bareGet),
        row('GET pipe', getPipe, bareGet, 0.7),
        row('GET alert (/api/v2/alerts/{id})', getAlert, bareGet, 0.7),
        row('bare Fastify POST (same body)', barePost, barePost),
        row('create pipe', createPipe, barePost, 0.1),
      ],
    );
    console.log(
      `the machine has ${cpus().length} cores; the server and autocannon share this process, so "process cores" is both sides; "machine busy" above what this process uses is other processes (figures move with them)`,
    );
  } finally {
    await bare.close();
    await sluice.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}
