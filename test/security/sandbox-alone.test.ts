import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  detectSandbox,
  EmbeddedEngine,
  type SandboxPolicy,
  serviceEngineRoom,
  sourceReaderRoom,
} from '../../src/engine/index.js';
import { startListener } from './support.js';

/**
 * The sandbox by itself, without the grants and text checks in front of it (README, "Security"):
 * engines with no grants at all (as the source reader runs) are started in exactly the rooms the
 * registry gives a service's engine and a source reader, and attacked with Sluice's own access.
 * Inside the sandbox nothing outside the room is read, written or reached. SLUICE_TEST_SANDBOX=off
 * starts the same engines as plain processes, where every attack below must get through: that is
 * how the suite shows it tests the sandbox.
 */
const SANDBOX = process.env.SLUICE_TEST_SANDBOX === 'off' ? 'off' : 'auto';

describe('security: the sandbox alone holds an engine with no grants to its room', () => {
  let dataDir: string;
  let policy: SandboxPolicy;
  let engine: EmbeddedEngine;
  let reader: EmbeddedEngine;
  let listener: Awaited<ReturnType<typeof startListener>>;
  const secret = `canary-${randomBytes(8).toString('hex')}`;
  const paths = { master: '', victim: '', own: '', scratch: '', files: '' };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sluice-sandbox-alone-'));
    policy = await detectSandbox(SANDBOX);
    if (SANDBOX === 'auto' && policy.kind !== 'bwrap')
      throw new Error(`no sandbox here (${policy.reason}); install bubblewrap (apt-get install bubblewrap)`);
    listener = await startListener();
    paths.master = join(dataDir, 'master.key');
    paths.victim = join(dataDir, 'services', 'victim');
    paths.own = join(dataDir, 'services', 'own');
    paths.scratch = join(paths.own, 'scratch');
    paths.files = join(dataDir, 'files');
    await writeFile(paths.master, secret);
    await mkdir(paths.victim, { recursive: true });
    await writeFile(join(paths.victim, 'canary.txt'), secret);
    await mkdir(paths.scratch, { recursive: true });
    await mkdir(paths.files, { recursive: true });
    await symlink(paths.master, join(paths.own, 'link-to-master.key'));
    const options = { dataDir, localFilesDir: paths.files };
    engine = new EmbeddedEngine(paths.own, {
      confined: false,
      sandbox: { policy, room: serviceEngineRoom(options) },
    });
    reader = new EmbeddedEngine(join(dataDir, 'readers', 'own'), {
      confined: false,
      sandbox: { policy, room: sourceReaderRoom(options, paths.scratch) },
    });
  });
  afterAll(async () => {
    await Promise.all([engine?.close(), reader?.close(), listener?.close()]);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  const fill = (text: string) =>
    text
      .replaceAll('{MASTER}', paths.master)
      .replaceAll('{DATA}', dataDir)
      .replaceAll('{VICTIM}', paths.victim)
      .replaceAll('{OWN}', paths.own)
      .replaceAll('{PORT}', String(listener.port));

  /** Runs an attack; what came back (rows or the engine's message). */
  const attack = async (on: EmbeddedEngine, sql: string) => {
    try {
      return JSON.stringify((await on.query(fill(sql))).rows);
    } catch (error) {
      return String((error as Error).message);
    }
  };

  const READS = [
    "SELECT file('{MASTER}') AS x",
    "SELECT * FROM file('{MASTER}', 'RawBLOB')",
    "SELECT file('{VICTIM}/canary.txt') AS x",
    "SELECT * FROM file('{VICTIM}/*.txt', 'RawBLOB')",
    "SELECT file('{OWN}/link-to-master.key') AS x",
    "SELECT file('{OWN}/../../master.key') AS x",
    "SELECT * FROM url('file://{MASTER}', 'RawBLOB')",
    "SELECT file('/proc/self/root{MASTER}') AS x",
  ];

  it.each(READS)("a service's engine reads nothing outside its room: %s", async (sql) => {
    expect(await attack(engine, sql)).not.toContain(secret);
  });

  it.each(READS)('a source reader reads nothing outside its room: %s', async (sql) => {
    expect(await attack(reader, sql)).not.toContain(secret);
  });

  it.each([
    "CREATE TABLE default.rocks (k String, v String) ENGINE = EmbeddedRocksDB(0, '{VICTIM}') PRIMARY KEY k",
    "INSERT INTO FUNCTION file('{VICTIM}/written.txt', 'RawBLOB') SELECT 'x'",
    "CREATE TABLE default.d (a String) ENGINE = MergeTree ORDER BY a SETTINGS disk = disk(type = local, path = '{DATA}/made-by-a-tenant/')",
  ])("a service's engine changes nothing outside its room: %s", async (sql) => {
    await attack(engine, sql);
    await attack(engine, 'TRUNCATE TABLE IF EXISTS default.rocks');
    expect(existsSync(join(paths.victim, 'canary.txt')), 'the victim’s file is gone').toBe(true);
    expect(
      existsSync(join(paths.victim, 'written.txt')),
      'a file was written in the victim’s directory',
    ).toBe(false);
    expect(existsSync(join(dataDir, 'made-by-a-tenant')), 'a directory was made in the data directory').toBe(
      false,
    );
  });

  /** One try, briefly: a refused connection is not retried for minutes. */
  const BRIEF = 'SETTINGS http_max_tries = 1, http_connection_timeout = 2, http_receive_timeout = 2';

  it('the tmpfs that hides the data directory takes no write (it would fill memory)', async () => {
    const said = await attack(engine, "INSERT INTO FUNCTION file('{DATA}/filler.bin', 'RawBLOB') SELECT 'x'");
    expect(said).toContain('Read-only file system');
    // Its own directory, bound inside that tmpfs, stays writable.
    await attack(engine, 'CREATE TABLE IF NOT EXISTS default.own (a String) ENGINE = MergeTree ORDER BY a');
    expect(await attack(engine, "INSERT INTO default.own VALUES ('x')")).toBe('[]');
  });

  it.each([
    [`SELECT * FROM url('http://127.0.0.1:{PORT}/', 'RawBLOB') ${BRIEF}`],
    [
      "CREATE TABLE default.s3 (a String) ENGINE = MergeTree ORDER BY a SETTINGS disk = disk(type = s3_plain_rewritable, endpoint = 'http://127.0.0.1:{PORT}/bucket/data/', access_key_id = 'a', secret_access_key = 'b')",
    ],
  ])("a service's engine reaches no network: %s", async (...statements) => {
    const before = listener.connections();
    const said = [];
    // Without a network the engine retries a refused connection for long: 5 s of it tells enough.
    const brief = new Promise<string>((resolve) =>
      setTimeout(() => resolve('still trying after 5 s'), 5_000),
    );
    for (const sql of statements) said.push(await Promise.race([attack(engine, sql), brief]));
    expect(listener.connections() - before, said.join('\n')).toBe(0);
  });

  it('a source reader reaches the network (that is its work), and reads the local files directory only', async () => {
    await writeFile(join(paths.files, 'a.ndjson'), '{"n":1}\n');
    expect(
      await attack(reader, `SELECT n FROM file('${join(paths.files, 'a.ndjson')}', 'JSONEachRow')`),
    ).toBe('[{"n":1}]');
    const before = listener.connections();
    const said = await attack(reader, `SELECT * FROM url('http://127.0.0.1:{PORT}/', 'RawBLOB') ${BRIEF}`);
    expect(listener.connections() - before, said).toBeGreaterThan(0);
    const write = await attack(
      reader,
      `INSERT INTO FUNCTION file('${join(paths.files, 'b.txt')}', 'RawBLOB') SELECT 'x'`,
    );
    expect(existsSync(join(paths.files, 'b.txt')), write).toBe(false);
  });
});
