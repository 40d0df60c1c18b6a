import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPipe, sql, waitForState } from './support/runtime.js';
import { startSluice, type TestSluice } from './support/sluice.js';
import { untilEqual } from './support/wait.js';

const rows = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => JSON.stringify({ id: from + i }))
    .join('\n')
    .concat('\n');

/** Stage tables of a pipe in its service's engine: data (with its errors) and history. */
const stagesOf = (s: TestSluice, pipeId: string) =>
  sql(
    s,
    `SELECT count() AS n FROM system.tables WHERE database = '_sluice_staging' AND name LIKE '%${pipeId.replace(/-/g, '')}%'`,
  );

/** A continuous pipe of the folder `name`'s NDJSON files into `idle.<table>`, polled every `pollMs`. */
const continuousPipe = (name: string, table: string, pollMs: number) => ({
  name,
  source: { objectStorage: { format: 'JSONEachRow', url: `file:///${name}/*.ndjson`, isContinuous: true } },
  destination: {
    database: 'idle',
    table,
    tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
    columns: [{ name: 'id', type: 'UInt64' }],
  },
  settings: { object_storage_polling_interval_ms: pollMs },
});

describe('an idle pipe keeps no staging tables (src/pipes/runtime/idle-stages.ts)', () => {
  let s: TestSluice;
  beforeAll(async () => {
    // The idle time before a run's stages go, shortened from a minute for the test.
    s = await startSluice({ runtime: true, env: { SLUICE_TEST_IDLE_STAGES_MS: '1500' } });
    await mkdir(join(s.dataDir, 'files', 'idle'), { recursive: true });
    await writeFile(join(s.dataDir, 'files', 'idle', '1.ndjson'), rows(0, 10));
  });
  afterAll(() => s.close());

  it('makes none for a pipe whose first listing found nothing (src/pipes/runtime/early-stages.ts)', async () => {
    await mkdir(join(s.dataDir, 'files', 'empty'), { recursive: true });
    const id = await createPipe(s, continuousPipe('empty', 'nothing', 100));
    await waitForState(s, id, 'Running');
    // Within the idle time (1.5 s here) a run's early stages would be there: none ever is.
    const seen = [];
    for (let i = 0; i < 10; i += 1) {
      seen.push((await stagesOf(s, id))[0]?.n);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(seen).toEqual(Array(10).fill(0));
    // A file then is read into stages its batch makes.
    await writeFile(join(s.dataDir, 'files', 'empty', '1.ndjson'), rows(0, 3));
    await untilEqual(() => sql(s, 'SELECT count() AS n FROM idle.nothing'), [{ n: 3 }]);
  });

  it('drops them once the source had nothing for a while, and makes them anew for the next file', async () => {
    const id = await createPipe(s, continuousPipe('idle', 'events', 200));
    await untilEqual(() => sql(s, 'SELECT count() AS n FROM idle.events'), [{ n: 10 }]);
    // The first file's batch ran in stages of slot 0 (data, its errors, history), which then idle.
    await untilEqual(() => stagesOf(s, id), [{ n: 0 }], 'the idle stages dropped', 20_000);
    // The next file's batch makes them anew: every row once.
    await writeFile(join(s.dataDir, 'files', 'idle', '2.ndjson'), rows(10, 5));
    await untilEqual(
      () => sql(s, 'SELECT count() AS n, uniqExact(id) AS ids FROM idle.events'),
      [{ n: 15, ids: 15 }],
    );
  });
});
