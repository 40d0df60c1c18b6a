import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { createSluice } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { objectStoragePipe } from '../test/support/pipes.js';
import { load, printTable } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = 10;

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

    const common = { seconds: SECONDS, connections: CONNECTIONS };
    const bareGet = await load({ ...common, url: `${bareBase}/bare` });
    const getPipe = await load({ ...common, url: `${pipes}/${pipeId}`, headers });
    const barePost = await load({ ...common, url: `${bareBase}/bare`, method: 'POST', body, headers });
    const createPipe = await load({ ...common, url: pipes, method: 'POST', body, headers });
    const row = (name: string, r: typeof bareGet, baseline: typeof bareGet) => ({
      request: name,
      'req/s': Math.round(r.requestsPerSecond),
      'p99 ms': r.p99Ms,
      'non-2xx': r.non2xx,
      'ratio vs bare': (r.requestsPerSecond / baseline.requestsPerSecond).toFixed(2),
    });
    printTable(
      `API throughput (${SECONDS} s each, ${CONNECTIONS} connections, metadata in PGlite, control plane only)`,
      [
        row('bare Fastify GET', bareGet, bareGet),
        row('GET pipe', getPipe, bareGet),
        row('bare Fastify POST (same body)', barePost, barePost),
        row('create pipe', createPipe, barePost),
      ],
    );
  } finally {
    await bare.close();
    await sluice.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}
