import { mkdir, mkdtemp, rm, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSluice } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { EmbeddedEngine } from '../src/engine/index.js';
import { createLogger } from '../src/log.js';
import { defaultService, printTable, ticks, waitForCompleted } from './support.js';

const PIPES = Number(process.env.BENCH_PIPES ?? 15);

/** CPU milliseconds of the Sluice process and the service's two engine processes. */
type Cpu = { sluice: number; engine: number; reader: number };

/** statfs's magic numbers of the filesystems a data directory is likely on (linux/magic.h). */
const FILESYSTEMS: Record<number, string> = {
  61267: 'ext2/3/4',
  16914836: 'tmpfs',
  1481003842: 'xfs',
  2435016766: 'btrfs',
  2035054128: 'overlayfs',
};

/**
 * What Sluice adds around a one-off object-storage pipe's load (issue #39: at 1M rows it weighed
 * as much as the load): pipes of a 10-row `file://` file, one after another, from create to
 * `Completed` (the state polled from the store every 5 ms), and the statements each sent to the
 * service's engine. The service's first pipe also makes the history's tables, and is shown apart.
 * The CPU each process spent per pipe says where the time goes; on an ext4 without a journal (the
 * development machine's), creating a file costs the engine a scan of recently deleted inodes,
 * which `TMPDIR=/dev/shm` (a tmpfs) takes away for comparison.
 */
export async function benchObjectStorageFixed(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-bench-fixed-'));
  await mkdir(join(dir, 'data', 'files', 'in'), { recursive: true });
  const lines = Array.from({ length: 10 }, (_, id) => JSON.stringify({ id, name: `n${id}` }));
  await writeFile(join(dir, 'data', 'files', 'in', 'a.ndjson'), `${lines.join('\n')}\n`);
  const sluice = await createSluice(
    loadConfig({
      SLUICE_DATA_DIR: join(dir, 'data'),
      SLUICE_RATE_LIMIT: '0',
      SLUICE_BOOTSTRAP_KEY_ID: 'sk_bench',
      SLUICE_BOOTSTRAP_KEY_SECRET: 'bench-secret-0123456789',
    }),
    { logger: createLogger('warn') },
  );
  try {
    const { service, scope } = await defaultService(sluice);
    const engine = sluice.engines.engineFor(service) as EmbeddedEngine;
    const reader = sluice.engines.sourceReaderFor(service) as EmbeddedEngine;
    await Promise.all([reader.query('SELECT 1'), engine.query('SELECT 1')]);
    let statements = 0;
    const [execute, query] = [engine.execute, engine.query];
    engine.execute = (sql, options) => {
      statements += 1;
      return execute.call(engine, sql, options);
    };
    engine.query = (sql, options) => {
      statements += 1;
      return query.call(engine, sql, options);
    };
    const runs: { created: number; completed: number; statements: number; cpu: Cpu }[] = [];
    const cpu = (): Cpu => {
      const own = process.cpuUsage();
      return {
        sluice: (own.user + own.system) / 1000,
        engine: ticks(engine.processId() ?? -1, false) * 10,
        reader: ticks(reader.processId() ?? -1, false) * 10,
      };
    };
    for (let index = 0; index <= PIPES; index += 1) {
      const [before, start, cpuBefore] = [statements, performance.now(), cpu()];
      const pipe = await sluice.pipes.create(scope, {
        name: `fixed ${index}`,
        source: { objectStorage: { format: 'JSONEachRow', url: 'file:///in/a.ndjson' } },
        destination: {
          database: 'fixed',
          table: `t${index}`,
          tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
          columns: [
            { name: 'id', type: 'UInt64' },
            { name: 'name', type: 'String' },
          ],
        },
      });
      const created = performance.now() - start;
      await waitForCompleted(sluice, scope, pipe.id, 5);
      const cpuAfter = cpu();
      runs.push({
        created,
        completed: performance.now() - start,
        statements: statements - before,
        cpu: {
          sluice: cpuAfter.sluice - cpuBefore.sluice,
          engine: cpuAfter.engine - cpuBefore.engine,
          reader: cpuAfter.reader - cpuBefore.reader,
        },
      });
    }
    const [first, ...later] = runs;
    const median = (values: number[]) =>
      [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
    const row = (label: string, of: typeof runs) => ({
      pipes: label,
      'create (checks) ms, median': Math.round(median(of.map((r) => r.created))),
      'create to Completed ms, median': Math.round(median(of.map((r) => r.completed))),
      'create to Completed ms, min': Math.round(Math.min(...of.map((r) => r.completed))),
      'engine statements per pipe': median(of.map((r) => r.statements)),
      'CPU ms, Sluice / engine / reader (mean)': (['sluice', 'engine', 'reader'] as const)
        .map((p) => Math.round(of.reduce((sum, r) => sum + r.cpu[p], 0) / Math.max(1, of.length)))
        .join(' / '),
    });
    const filesystem = await statfs(dir);
    console.log(
      `data directory ${dir}: ${FILESYSTEMS[filesystem.type] ?? `filesystem type 0x${filesystem.type.toString(16)}`}`,
    );
    printTable(`A one-off file:// pipe of 10 rows, what Sluice adds around the load (${PIPES} pipes)`, [
      row("the service's first", first ? [first] : []),
      row('the others', later),
    ]);
  } finally {
    await sluice.close();
    await rm(dir, { recursive: true, force: true });
  }
}
