import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServedSluice } from './support/cli.js';
import {
  dieAt,
  KILL_STEPS,
  type KillStep,
  type Served,
  serve,
  statusUntil,
  stop,
} from './support/kill-steps.js';

// Materialized views see only what is inserted into their table: a partition moved in reaches none.
// A Null destination (which keeps nothing) and a destination with views get their staged batch by
// one insert at the moves, once, whole (src/pipes/runtime/stages.ts, passOn). A real server process
// (`sluice serve`, runtime on) is killed with SIGKILL at each step of a pipe's first batch
// (src/failpoints.ts); the view's table (and a MergeTree destination itself) must hold every row
// once, equal rows as many times as they come.

/** Two rows and a malformed line: every batch has rows to pass on and a bad record to move after. */
const FILE = '{"k": 1, "v": "a"}\n{"k": 2, "v": "b"}\n{not json\n';
const FILES = 4;

let dataDir: string;
const servers: ServedSluice[] = [];
const ids = new Map<string, string>();
let served: Served;

const KINDS = ['null', 'views'] as const;
type Kind = (typeof KINDS)[number];
const table = (name: string) => name.replace(/-/g, '_');

/**
 * The table a pipe writes (Null, or a MergeTree table of two partitions), and a view passing what
 * is inserted into it into a MergeTree table.
 */
async function destinationWithView(on: Served, kind: Kind, name: string): Promise<void> {
  const engine = kind === 'null' ? 'Null' : 'MergeTree PARTITION BY k ORDER BY k';
  await on.query('CREATE DATABASE IF NOT EXISTS nul');
  await on.query(`CREATE TABLE nul.in_${name} (k UInt8, v String) ENGINE = ${engine}`);
  await on.query(`CREATE TABLE nul.out_${name} (k UInt8, v String) ENGINE = MergeTree ORDER BY k`);
  await on.query(
    `CREATE MATERIALIZED VIEW nul.view_${name} TO nul.out_${name} AS SELECT k, v FROM nul.in_${name}`,
  );
}

const pipe = (name: string) => ({
  name,
  source: { objectStorage: { format: 'JSONEachRow', url: 'file:///equal/*.ndjson' } },
  destination: {
    database: 'nul',
    table: `in_${table(name)}`,
    managedTable: false,
    columns: [
      { name: 'k', type: 'UInt8' },
      { name: 'v', type: 'String' },
    ],
  },
  // Equal files, two to a batch.
  settings: { object_storage_max_file_count: 2 },
});

/** The destination and its view, then the pipe `name` into it. */
async function createWithView(on: Served, kind: Kind, name: string): Promise<void> {
  await destinationWithView(on, kind, table(name));
  const created = await on.call(on.pipes, 'POST', pipe(name));
  expect(created.status, created.error).toBe(200);
  ids.set(name, created.result.id);
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sluice-null-'));
  await mkdir(join(dataDir, 'files', 'equal'), { recursive: true });
  for (let i = 0; i < FILES; i += 1) await writeFile(join(dataDir, 'files', 'equal', `${i}.ndjson`), FILE);
  // One pipe per kind and step, killed there on its first batch; each earlier pipe resumes on the
  // next server, and completes there before the next pipe is made: a kill meant for one pipe must
  // not land in another's insert (between it and its stage's emptying), the one window where a
  // batch is inserted again (at least once). Last, one killed in that window, which the next
  // server says.
  const killed: [Kind, KillStep][] = [
    ...KINDS.flatMap((kind) => KILL_STEPS.map((step): [Kind, KillStep] => [kind, step])),
    ['views', 'inserted'],
  ];
  for (const [kind, step] of killed) {
    const name = `${kind}-${step}`;
    await dieAt({
      dataDir,
      env: {},
      step,
      pipeName: name,
      started: (server) => servers.push(server),
      act: async (on) => {
        for (const id of ids.values()) await statusUntil(on, id, (s) => s.state === 'Completed');
        await createWithView(on, kind, name);
      },
    });
  }
  served = await serve(dataDir, {});
  servers.push(served.server);
  for (const kind of KINDS) await createWithView(served, kind, `${kind}-never-killed`);
  // Columns the Null table computes itself (or never stores): its view sees them as a user's insert makes them.
  await served.query(
    "CREATE TABLE nul.computed (k UInt8, v String, m String MATERIALIZED upper(v), a String ALIAS concat(v, '!'), d String DEFAULT 'dflt', e UInt8 EPHEMERAL) ENGINE = Null",
  );
  await served.query(
    'CREATE TABLE nul.computed_out (k UInt8, v String, m String, a String, d String) ENGINE = MergeTree ORDER BY k',
  );
  await served.query(
    'CREATE MATERIALIZED VIEW nul.computed_view TO nul.computed_out AS SELECT k, v, m, a, d FROM nul.computed',
  );
  const computed = await served.call(served.pipes, 'POST', {
    ...pipe('computed'),
    destination: { ...pipe('computed').destination, table: 'computed' },
  });
  expect(computed.status, computed.error).toBe(200);
  ids.set('computed', computed.result.id);
}, 600_000);

afterAll(async () => {
  if (served) await stop(served);
  for (const server of servers) if (server.child.exitCode === null) server.child.kill('SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
});

const cases = KINDS.flatMap((kind) => ['never-killed', ...KILL_STEPS].map((step) => `${kind}-${step}`));

describe('a Null destination, or one with materialized views, gets each batch once (a real server process)', () => {
  it.each(cases)('%s: its view holds every row of the equal files once each', async (name) => {
    const status = await statusUntil(served, ids.get(name) as string, (s) => s.state === 'Completed');
    const rows = [
      { k: 1, v: 'a', n: FILES },
      { k: 2, v: 'b', n: FILES },
    ];
    const held = (of: string) =>
      served.query(
        `SELECT k, v, toUInt32(count()) AS n FROM nul.${of}_${table(name)} GROUP BY k, v ORDER BY k`,
      );
    expect(await held('out')).toEqual(rows);
    if (name.startsWith('views')) expect(await held('in')).toEqual(rows);
    expect(await served.query(`SELECT count() AS n FROM nul.in_${table(name)}_pipes_error`)).toEqual([
      { n: FILES },
    ]);
    expect(status).toMatchObject({ filesDone: FILES, rowsWritten: 2 * FILES, badRecords: FILES });
    // No server found its batch half inserted (the window views-inserted shows).
    for (const server of servers) {
      expect(server.output()).not.toContain(`inserted into nul.in_${table(name)} when the pipe stopped`);
    }
  });

  it('views-inserted: killed after its insert, before its stage was emptied, its first batch is inserted again and the log says so', async () => {
    const status = await statusUntil(
      served,
      ids.get('views-inserted') as string,
      (s) => s.state === 'Completed',
    );
    // The first batch (two of the four equal files) twice: at least once, never lost.
    const rows = [
      { k: 1, v: 'a', n: FILES + 2 },
      { k: 2, v: 'b', n: FILES + 2 },
    ];
    const held = (of: string) =>
      served.query(
        `SELECT k, v, toUInt32(count()) AS n FROM nul.${of}_views_inserted GROUP BY k, v ORDER BY k`,
      );
    expect(await held('out')).toEqual(rows);
    expect(await held('in')).toEqual(rows);
    expect(status).toMatchObject({ filesDone: FILES, rowsWritten: 2 * FILES, badRecords: FILES });
    expect(served.server.output()).toContain(
      'was being inserted into nul.in_views_inserted when the pipe stopped: it is inserted again, so its 4 rows may be there',
    );
  });

  it('passes on the columns a Null table stores; it computes its materialized, alias and default columns as for any insert', async () => {
    await statusUntil(served, ids.get('computed') as string, (s) => s.state === 'Completed');
    expect(
      await served.query(
        'SELECT k, v, m, a, d, toUInt32(count()) AS n FROM nul.computed_out GROUP BY k, v, m, a, d ORDER BY k',
      ),
    ).toEqual([
      { k: 1, v: 'a', m: 'A', a: 'a!', d: 'dflt', n: FILES },
      { k: 2, v: 'b', m: 'B', a: 'b!', d: 'dflt', n: FILES },
    ]);
  });
});
