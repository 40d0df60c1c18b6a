import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSluice } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { EmbeddedEngine, literal } from '../src/engine/index.js';
import { createLogger } from '../src/log.js';
import { S3_KEY, startS3 } from '../test/support/s3.js';
import { printTable } from './support.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const STRUCTURE = 'id UInt64, name String, amount Float64, ts DateTime, category String';
const COLUMNS = STRUCTURE.split(', ').map((column) => {
  const [name, type] = column.split(' ');
  return { name: name as string, type: type as string };
});
const FORMATS = [
  ['NDJSON', 'data.ndjson', 'JSONEachRow'],
  ['CSV', 'data.csv', 'CSVWithNames'],
  ['Parquet', 'data.parquet', 'Parquet'],
] as const;

/**
 * Sluice's object-storage ingest rate against, in the same run: the engine's own load of the same
 * file from local disk (INSERT ... SELECT FROM file()), the engine reading it from s3rver itself
 * (INSERT ... SELECT FROM s3(), the ceiling of any pipe), and the plain download of it. s3rver
 * serves from this process's single JavaScript thread, which bounds every S3 figure here.
 */
export async function benchObjectStorage(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-bench-os-'));
  const s3 = await startS3(['bench']);
  const writer = new EmbeddedEngine(join(dir, 'writer'), { confined: false });
  const keyId = 'sk_bench';
  const keySecret = 'bench-secret-0123456789';
  const sluice = await createSluice(
    loadConfig({
      SLUICE_DATA_DIR: join(dir, 'data'),
      SLUICE_RATE_LIMIT: '0',
      SLUICE_ALLOW_PRIVATE_SOURCES: 'true',
      SLUICE_BOOTSTRAP_KEY_ID: keyId,
      SLUICE_BOOTSTRAP_KEY_SECRET: keySecret,
    }),
    { logger: createLogger('warn') },
  );
  try {
    const organization = (await sluice.identity.listOrganizations({ organizationId: '', operator: true }))[0];
    const service = (await sluice.identity.listServices(organization?.id ?? ''))[0];
    if (!organization || !service) throw new Error('no default service');
    const scope = { organizationId: organization.id, serviceId: service.id };
    // The baselines call the engine's own table functions, which a service's engine is not granted
    // (README, "Security"): they run on an engine process of their own, as the source reader does.
    const run = (sql: string) => writer.execute(sql);
    // The source reader's process starts once per service, on its first read: started
    // here so every format measures ingestion, as the baselines (on a started engine) do.
    await sluice.engines.sourceReaderFor(service).query('SELECT 1');
    const rows: Record<string, string | number>[] = [];
    for (const [label, file, format] of FORMATS) {
      const path = join(dir, file);
      await writer.execute(
        `INSERT INTO FUNCTION file(${literal(path)}, ${literal(format)}, ${literal(STRUCTURE)})
         SELECT number, concat('name ', toString(number)), number * 0.25, toDateTime('2026-01-01 00:00:00') + number,
                ['alpha', 'beta', 'gamma'][number % 3 + 1] FROM numbers(${ROWS})`,
        { settings: { engine_file_truncate_on_insert: 1 } },
      );
      const bytes = (await stat(path)).size;
      await s3.put('bench', file, await readFile(path));

      const download = await timed(async () => {
        const response = await fetch(`${s3.endpoint}/bench/${file}`);
        await response.arrayBuffer();
      });
      const table = `own_${format.toLowerCase()}`;
      await run('CREATE DATABASE IF NOT EXISTS bench');
      await run(`CREATE TABLE bench.${table} (${STRUCTURE}) ENGINE = MergeTree ORDER BY id`);
      const own = await timed(() =>
        run(
          `INSERT INTO bench.${table} SELECT * FROM file(${literal(path)}, ${literal(format)}, ${literal(STRUCTURE)})`,
        ),
      );
      const direct = `direct_${format.toLowerCase()}`;
      await run(`CREATE TABLE bench.${direct} (${STRUCTURE}) ENGINE = MergeTree ORDER BY id`);
      const engineS3 = await timed(() =>
        run(
          `INSERT INTO bench.${direct} SELECT * FROM s3(${literal(`${s3.endpoint}/bench/${file}`)}, 'S3RVER', 'S3RVER', ${literal(format)}, ${literal(STRUCTURE)})`,
        ),
      );
      const viaPipe = await timed(async () => {
        const pipe = await sluice.pipes.create(scope, {
          name: `bench ${label}`,
          source: {
            objectStorage: {
              format,
              url: `${s3.endpoint}/bench/${file}`,
              authentication: 'IAM_USER',
              accessKey: S3_KEY,
            },
          },
          destination: {
            database: 'bench',
            table: `pipe_${format.toLowerCase()}`,
            tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
            columns: COLUMNS,
          },
        });
        for (;;) {
          const status = await sluice.pipes.status(scope, pipe.id);
          if (status.state === 'Completed') break;
          if (status.state === 'Failed') throw new Error(`bench pipe failed: ${status.reason}`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      });
      rows.push({
        format: label,
        'file MB': (bytes / 1e6).toFixed(1),
        'download s': download.toFixed(2),
        'engine own load rows/s': Math.round(ROWS / own),
        'engine reads s3 rows/s': Math.round(ROWS / engineS3),
        'Sluice pipe rows/s': Math.round(ROWS / viaPipe),
        'ratio vs own load': (own / viaPipe).toFixed(2),
        'ratio vs engine s3': (engineS3 / viaPipe).toFixed(2),
        'ratio vs download': (download / viaPipe).toFixed(2),
      });
    }
    printTable(
      `Object storage ingest (${ROWS.toLocaleString('en')} rows of 5 columns, s3rver to embedded chDB)`,
      rows,
    );
  } finally {
    await sluice.close();
    await writer.close();
    await s3.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return (performance.now() - start) / 1000;
}
