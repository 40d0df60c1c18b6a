import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSluice } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { EmbeddedEngine, literal } from '../src/engine/index.js';
import { createLogger } from '../src/log.js';
import { benchIdleFootprint } from './footprint.js';
import { printTable, ticks } from './support.js';

const TARGET_BYTES = Number(process.env.BENCH_MEMORY_BYTES ?? 1024 ** 3);
const ROW_BYTES = 110;

/**
 * Memory while a 1 GB NDJSON file ingests through a pipe: the resident set of the Sluice process
 * and of its embedded engine process, sampled every 50 ms, against their levels before the pipe.
 * Sluice streams nothing through JavaScript here (the engine reads the file), so its own growth
 * should stay near zero; the engine's is the cost of parsing and merging.
 */
export async function benchMemory(): Promise<void> {
  await benchIdleFootprint();
  const dir = await mkdtemp(join(tmpdir(), 'sluice-bench-mem-'));
  const files = join(dir, 'data/files');
  await mkdir(files, { recursive: true });
  const writer = new EmbeddedEngine(join(dir, 'writer'), { confined: false });
  const rows = Math.ceil(TARGET_BYTES / ROW_BYTES);
  const path = join(files, 'big.ndjson');
  await writer.execute(
    `INSERT INTO FUNCTION file(${literal(path)}, 'JSONEachRow', 'id UInt64, name String, amount Float64, note String')
     SELECT number, concat('name ', toString(number)), number * 0.25, repeat('x', 40) FROM numbers(${rows})`,
    { settings: { engine_file_truncate_on_insert: 1 } },
  );
  await writer.close();
  const bytes = (await stat(path)).size;
  const sluice = await createSluice(
    loadConfig({ SLUICE_DATA_DIR: join(dir, 'data'), SLUICE_RATE_LIMIT: '0' }),
    {
      logger: createLogger('warn'),
    },
  );
  try {
    const organization = (await sluice.identity.listOrganizations({ organizationId: '', operator: true }))[0];
    const service = (await sluice.identity.listServices(organization?.id ?? ''))[0];
    if (!organization || !service) throw new Error('no default service');
    const scope = { organizationId: organization.id, serviceId: service.id };
    await sluice.query.run(scope, 'admin', { sql: 'SELECT 1' }); // start the engine process
    const engine = sluice.engines.engineFor(service) as EmbeddedEngine;
    const reader = sluice.engines.sourceReaderFor(service) as EmbeddedEngine;
    await reader.query('SELECT 1'); // start the source reader's process
    const baseline = {
      sluice: rssOf(process.pid),
      engine: await rssOfPid(engine.processId()),
      reader: await rssOfPid(reader.processId()),
    };
    const peak = { ...baseline };
    // CPU seconds of each process while the file ingests (its source reader and engine in theirs).
    const cpuOf = () => ({
      sluice: ticks(process.pid, false) / 100,
      engine: ticks(engine.processId() ?? -1, false) / 100,
      reader: ticks(reader.processId() ?? -1, false) / 100,
    });
    const cpuBefore = cpuOf();
    const sampler = setInterval(async () => {
      peak.sluice = Math.max(peak.sluice, rssOf(process.pid));
      peak.engine = Math.max(peak.engine, await rssOfPid(engine.processId()));
      peak.reader = Math.max(peak.reader, await rssOfPid(reader.processId()));
    }, 50);
    const start = performance.now();
    const pipe = await sluice.pipes.create(scope, {
      name: 'one big file',
      source: { objectStorage: { format: 'JSONEachRow', url: 'file:///big.ndjson' } },
      destination: {
        table: 'big',
        tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
        columns: [
          { name: 'id', type: 'UInt64' },
          { name: 'name', type: 'String' },
          { name: 'amount', type: 'Float64' },
          { name: 'note', type: 'String' },
        ],
      },
    });
    for (;;) {
      const status = await sluice.pipes.status(scope, pipe.id);
      if (status.state === 'Completed') break;
      if (status.state === 'Failed') throw new Error(status.reason ?? 'failed');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const seconds = (performance.now() - start) / 1000;
    clearInterval(sampler);
    const cpuAfter = cpuOf();
    const cpu = (which: keyof typeof cpuAfter) => (cpuAfter[which] - cpuBefore[which]).toFixed(2);
    const mb = (value: number) => Math.round(value / 1024 / 1024);
    printTable(
      `Memory while a ${(bytes / 1e9).toFixed(2)} GB NDJSON file (${rows.toLocaleString('en')} rows) ingests in ${seconds.toFixed(1)} s`,
      [
        {
          process: 'Sluice (API + runtime)',
          'RSS before MB': mb(baseline.sluice),
          'peak MB': mb(peak.sluice),
          'growth MB': mb(peak.sluice - baseline.sluice),
          'CPU s': cpu('sluice'),
        },
        {
          process: "the service's engine (chDB)",
          'RSS before MB': mb(baseline.engine),
          'peak MB': mb(peak.engine),
          'growth MB': mb(peak.engine - baseline.engine),
          'CPU s': cpu('engine'),
        },
        {
          process: 'the source reader (chDB)',
          'RSS before MB': mb(baseline.reader),
          'peak MB': mb(peak.reader),
          'growth MB': mb(peak.reader - baseline.reader),
          'CPU s': cpu('reader'),
        },
      ],
    );
  } finally {
    await sluice.close();
    await rm(dir, { recursive: true, force: true });
  }
}

function rssOf(_pid: number): number {
  return process.memoryUsage.rss();
}

async function rssOfPid(pid: number | undefined): Promise<number> {
  if (!pid) return 0;
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}
