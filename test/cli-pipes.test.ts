import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopChild } from './support/child.js';
import { sluiceCli, sluiceServe } from './support/cli.js';

const PIPE = {
  name: 'clicks',
  source: {
    objectStorage: { type: 's3', format: 'JSONEachRow', url: 'file:///clicks/*.ndjson', isContinuous: true },
  },
  destination: {
    table: 'clicks',
    tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['id'] },
    columns: [
      { name: 'id', type: 'UInt64' },
      { name: 'page', type: 'String' },
    ],
  },
  fieldMappings: [
    { sourceField: 'id', destinationField: 'id' },
    { sourceField: 'page', destinationField: 'page' },
  ],
};

/** `sluice pipes` against a real server started as a user starts it, with a real pipe ingesting. */
describe('sluice pipes', () => {
  let dir: string;
  let env: Record<string, string>;
  let withKey: Record<string, string>;
  let server: Awaited<ReturnType<typeof sluiceServe>> | undefined;
  const cli = async (args: string[], expected = 0) => {
    const result = await sluiceCli(args, withKey);
    expect(result.code, `${args.join(' ')}\n${result.stderr}`).toBe(expected);
    return result;
  };
  const statusOf = async () => JSON.parse((await cli(['pipes', 'status', 'clicks', '--json'])).stdout);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-cli-pipes-'));
    const dataDir = join(dir, 'data');
    env = { SLUICE_DATA_DIR: dataDir, SLUICE_LOG_LEVEL: 'warn', SLUICE_PORT: '0' };
    const key = JSON.parse(
      (await sluiceCli(['keys', 'create', '--role', 'admin', '--name', 'ops', '--json'], env)).stdout,
    );
    withKey = { ...env, SLUICE_KEY_ID: key.id, SLUICE_KEY_SECRET: key.secret };
    await mkdir(join(dataDir, 'files/clicks'), { recursive: true });
    await writeFile(
      join(dataDir, 'files/clicks/1.ndjson'),
      '{"id":1,"page":"/a"}\n{"id":2,"page":"/b"}\n{"id":"three","page":"/c"}\n{"id":4,"page":"/d"}\n',
    );
    await writeFile(join(dir, 'pipe.json'), JSON.stringify(PIPE));
    await writeFile(join(dir, 'bad.json'), JSON.stringify({ ...PIPE, name: '', destination: {} }));
    await writeFile(join(dir, 'broken.json'), '{"name": ');
  }, 120_000);
  afterAll(async () => {
    if (server) await stopChild(server.child);
    await rm(dir, { recursive: true, force: true });
  });

  it('says a server is needed when none runs, and explains itself', async () => {
    const result = await sluiceCli(['pipes', 'list'], withKey);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('no Sluice server holds');
    expect(result.stderr).toContain('start it (sluice serve, or npm start)');
    const help = await sluiceCli(['pipes', '--help'], withKey);
    expect(help.stdout).toContain('sluice pipes create <file.json | ->');
    const unknown = await sluiceCli(['pipes', 'frob'], withKey);
    expect(unknown.stderr).toContain('pipes: unknown action "frob": one of list, get, status, create');
  });

  it('creates from a JSON file, lists with state and rows, shows status and error rows, stops, starts, deletes', async () => {
    server = await sluiceServe(env);
    const created = JSON.parse((await cli(['pipes', 'create', join(dir, 'pipe.json'), '--json'])).stdout);
    expect(created).toMatchObject({ name: 'clicks', state: expect.any(String) });
    for (let i = 0; (await statusOf()).rowsWritten !== 3; i++) {
      if (i > 300) throw new Error(`the pipe did not ingest: ${JSON.stringify(await statusOf())}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await statusOf()).toMatchObject({ state: 'Running', rowsWritten: 3, badRecords: 1, filesDone: 1 });

    const list = (await cli(['pipes', 'list'])).stdout.split('\n');
    expect(list[0]).toMatch(/^ID\s+NAME\s+STATE\s+SOURCE\s+TABLE\s+ROWS$/);
    expect(list[1]).toMatch(
      new RegExp(`^${created.id}\\s+clicks\\s+Running\\s+objectStorage\\s+default\\.clicks\\s+3$`),
    );
    const listed = JSON.parse((await cli(['pipes', 'list', '--json'])).stdout);
    expect(listed).toEqual([expect.objectContaining({ id: created.id, state: 'Running', rows: 3 })]);

    const got = (await cli(['pipes', 'get', created.id])).stdout;
    expect(got).toMatch(/source\.objectStorage\.url:\s+file:\/\/\/clicks\/\*\.ndjson/);
    expect((await cli(['pipes', 'status', 'clicks'])).stdout).toMatch(/rowsWritten:\s+3/);
    // The last hour from the pipe's history, a minute each: its three rows in one of them.
    const history = (await cli(['pipes', 'status', 'clicks', '--history'])).stdout.split('\n');
    expect(history[0]).toMatch(/^MINUTE\s+ROWS\s+ROWS\/S\s+LAG$/);
    expect(history.filter((line) => /^\d{4}-\d\d-\d\d \d\d:\d\d\s+3\s+0\.05\s*$/.test(line))).toHaveLength(1);
    const minutes = JSON.parse((await cli(['pipes', 'status', 'clicks', '--history', '--json'])).stdout);
    expect(minutes).toHaveLength(60);
    const rows = minutes.map((m: { rowsPerSecond: number }) => Math.round(m.rowsPerSecond * 60));
    expect(rows.reduce((a: number, b: number) => a + b, 0)).toBe(3);

    const errors = (await cli(['pipes', 'errors', 'clicks'])).stdout.split('\n');
    expect(errors[0]).toMatch(/^TIME\s+SOURCE\s+ROW\s+ERROR\s+RAW$/);
    expect(errors[1]).toContain('clicks/1.ndjson');
    const errorRows = JSON.parse((await cli(['pipes', 'errors', 'clicks', '--json', '--limit', '5'])).stdout);
    expect(errorRows).toHaveLength(1);
    expect(errorRows[0].raw).toContain('"three"');

    expect((await cli(['pipes', 'stop', 'clicks'])).stdout).toMatch(/state:\s+Stopped/);
    expect((await statusOf()).state).toBe('Stopped');
    await cli(['pipes', 'start', 'clicks']);
    expect(['Running', 'Provisioning']).toContain((await statusOf()).state);

    const bad = await cli(['pipes', 'create', join(dir, 'bad.json')], 1);
    expect(bad.stderr).toContain('name');
    const broken = await cli(['pipes', 'create', join(dir, 'broken.json')], 1);
    expect(broken.stderr).toContain('broken.json is not JSON');
    const missing = await cli(['pipes', 'get', 'nope'], 1);
    expect(missing.stderr).toContain('no pipe named or with id "nope"');
    expect((await cli(['pipes', 'errors', 'clicks', '--limit', 'lots'], 1)).stderr).toContain('--limit');

    expect((await cli(['pipes', 'delete', 'clicks'])).stdout).toContain(`deleted pipe ${created.id}`);
    expect((await cli(['pipes', 'list'])).stdout.trim()).toBe('(none)');

    const piped = await sluiceCli(
      ['pipes', 'create', '-', '--json'],
      withKey,
      JSON.stringify({ ...PIPE, name: 'piped', destination: { ...PIPE.destination, table: 'piped' } }),
    );
    expect(piped.code, piped.stderr).toBe(0);
    expect(JSON.parse((await cli(['pipes', 'list', '--json'])).stdout)).toEqual([
      expect.objectContaining({ name: 'piped' }),
    ]);
    // About 40 CLI runs, each a Node process started with tsx: 53-120 s in CI on 2 cores.
  }, 300_000);
});
