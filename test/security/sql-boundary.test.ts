import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../../src/engine/index.js';
import { sql } from '../support/runtime.js';
import { basic, startSluice, type TestSluice } from '../support/sluice.js';
import { attempt, keyOf, startListener } from './support.js';

/**
 * The SQL boundary, attacked as a tenant would with only the API (README, "Security"): with an
 * admin, a developer and a read-only key, the engine never reads a host file, never reaches a
 * network listener, never writes for a caller that may only read, and the pipes' engine session
 * keeps its settings. Every attack is run against a real embedded engine (chDB).
 */
describe('security: user SQL cannot leave its service or its role', () => {
  let s: TestSluice;
  let listener: Awaited<ReturnType<typeof startListener>>;
  let keys: Record<'admin' | 'developer' | 'read-only', string>;
  let masterKey: string;
  let outfile: string;
  let otherServiceDir: string;
  let otherTablePath: string;
  const OTHER_MARKER = 'other-organization-secret-row';

  /** Each attack with its placeholders filled in. */
  const fill = (text: string) =>
    text
      .replaceAll('{MASTER}', join(s.dataDir, 'master.key'))
      .replaceAll('{DATA}', s.dataDir)
      .replaceAll('{OTHER}', otherServiceDir)
      .replaceAll('{OTHER_TABLE}', otherTablePath)
      .replaceAll('{OUTFILE}', outfile)
      .replaceAll('{PORT}', String(listener.port));

  beforeAll(async () => {
    s = await startSluice({ runtime: true });
    listener = await startListener();
    masterKey = (await readFile(join(s.dataDir, 'master.key'), 'utf8')).trim();
    outfile = join(s.dataDir, 'written-by-a-tenant.txt');
    keys = {
      admin: s.admin,
      developer: await keyOf(s, 'developer'),
      'read-only': await keyOf(s, 'read-only'),
    };
    await sql(s, 'CREATE DATABASE IF NOT EXISTS app');
    await sql(s, 'CREATE TABLE app.t (v String) ENGINE = MergeTree ORDER BY v');
    await sql(s, 'CREATE TABLE app.keep (v String) ENGINE = MergeTree ORDER BY v');
    await sql(s, "INSERT INTO app.t VALUES ('a'), ('b'), ('c')");
    // Another organization, with a service and rows of its own.
    const created = await s.request({ method: 'POST', url: '/v1/organizations', body: { name: 'victim' } });
    const { organization, key } = created.json.result;
    const victim = basic(key.id, key.secret);
    const service = await s.request({
      method: 'POST',
      url: `/v1/organizations/${organization.id}/services`,
      body: { name: 'private' },
      auth: victim,
    });
    const victimQuery = async (text: string) => {
      const response = await s.request({
        method: 'POST',
        url: `/v1/organizations/${organization.id}/services/${service.json.result.id}/query`,
        body: { sql: text },
        auth: victim,
      });
      expect(response.statusCode).toBe(200);
      return response.json.result.rows;
    };
    await victimQuery('CREATE TABLE default.secrets (v String) ENGINE = MergeTree ORDER BY v');
    await victimQuery(`INSERT INTO default.secrets VALUES ('${OTHER_MARKER}')`);
    otherServiceDir = join(s.dataDir, 'services', service.json.result.id);
    otherTablePath = String(
      (await victimQuery("SELECT data_paths[1] AS p FROM system.tables WHERE name = 'secrets'"))[0].p,
    );
  });
  afterAll(async () => {
    await listener?.close();
    await s?.close();
  });

  const HOST_FILES = [
    "SELECT * FROM file('{MASTER}', 'RawBLOB')",
    "SELECT * FROM `file`('{MASTER}', 'RawBLOB')",
    "SELECT * FROM \"file\"('{MASTER}', 'RawBLOB')",
    "SELECT * FROM FiLe('{MASTER}', 'RawBLOB')",
    "SELECT * FROM file/* hidden */('{MASTER}', 'RawBLOB')",
    "SELECT $$it's$$ AS a, * FROM file('{MASTER}', 'RawBLOB')",
    "SELECT 1 /* /* nested */ */ AS a, * FROM file('{MASTER}', 'RawBLOB')",
    "SELECT (SELECT any(raw_blob) FROM file('{MASTER}', 'RawBLOB')) AS k",
    "SELECT * FROM file('{OTHER}/store/*/*/*/*.bin', 'RawBLOB')",
    "SELECT * FROM url('file://{MASTER}', 'RawBLOB')",
    "SELECT * FROM icebergLocal('{DATA}')",
    "SELECT * FROM deltaLakeLocal('{DATA}')",
    "CREATE TABLE app.f (a String) ENGINE = File(RawBLOB, '{MASTER}')",
    "CREATE DATABASE fsdb ENGINE = Filesystem('{DATA}')",
    "CREATE DATABASE lite ENGINE = SQLite('{MASTER}')",
    "INSERT INTO app.t (v) FROM INFILE '{MASTER}' FORMAT RawBLOB",
    "ATTACH TABLE app.stolen FROM '{OTHER_TABLE}' (v String) ENGINE = MergeTree ORDER BY v",
    "SELECT 1 INTO OUTFILE '{OUTFILE}'",
    "SELECT * FROM app.t INTO OUTFILE '{OUTFILE}' FORMAT RawBLOB",
    "EXPLAIN SELECT 1 INTO OUTFILE '{OUTFILE}'",
    "SELECT 1 SETTINGS input_format_record_errors_file_path = '{OUTFILE}'",
    "SELECT * FROM executable('x.sh', 'TSV', 'a String')",
    "SELECT * FROM executable('../../../../../../bin/echo', 'TSV', 'a String', (SELECT 'x'))",
    'SELECT addressToLine(toUInt64(1))',
    'SYSTEM RELOAD CONFIG',
    "BACKUP TABLE app.t TO File('{OUTFILE}')",
  ];

  const NETWORK = [
    "SELECT * FROM url('http://127.0.0.1:{PORT}/', 'RawBLOB')",
    "SELECT * FROM `url`('http://127.0.0.1:{PORT}/', 'RawBLOB')",
    "SELECT * FROM URL('http://127.0.0.1:{PORT}/', 'RawBLOB')",
    "SELECT * FROM s3('http://127.0.0.1:{PORT}/bucket/key', 'RawBLOB')",
    "SELECT * FROM remote('127.0.0.1:{PORT}', system.one)",
    "SELECT * FROM remoteSecure('127.0.0.1:{PORT}', system.one)",
    "SELECT * FROM mysql('127.0.0.1:{PORT}', 'db', 't', 'u', 'p')",
    "SELECT * FROM postgresql('127.0.0.1:{PORT}', 'db', 't', 'u', 'p')",
    "SELECT * FROM azureBlobStorage('DefaultEndpointsProtocol=http;AccountName=a;AccountKey=YQ==;BlobEndpoint=http://127.0.0.1:{PORT}/a', 'c', 'b')",
    "CREATE DICTIONARY app.d (id UInt64) PRIMARY KEY id SOURCE(HTTP(url 'http://127.0.0.1:{PORT}/' format 'TSV')) LIFETIME(0) LAYOUT(FLAT())",
    "CREATE DICTIONARY app.d2 (id UInt64) PRIMARY KEY id SOURCE(CLICKHOUSE(host '127.0.0.1' port {PORT})) LIFETIME(0) LAYOUT(FLAT())",
    "CREATE TABLE app.u (a String) ENGINE = URL('http://127.0.0.1:{PORT}/', RawBLOB)",
    "CREATE TABLE app.w (a String) ENGINE = MergeTree ORDER BY a SETTINGS disk = disk(type = web, endpoint = 'http://127.0.0.1:{PORT}/')",
    "CREATE TABLE app.k (a String) ENGINE = Kafka SETTINGS kafka_broker_list = '127.0.0.1:{PORT}', kafka_topic_list = 't', kafka_group_name = 'g', kafka_format = 'TSV'",
    "INSERT INTO FUNCTION url('http://127.0.0.1:{PORT}/', 'TSV', 'a String') VALUES ('x')",
    "CREATE NAMED COLLECTION nc AS url = 'http://127.0.0.1:{PORT}/'",
    "SELECT 1; SELECT * FROM url('http://127.0.0.1:{PORT}/', 'RawBLOB')",
    "SELECT * FROM urlCluster('default', 'http://127.0.0.1:{PORT}/', 'RawBLOB')",
    "SELECT * FROM s3Cluster('default', 'http://127.0.0.1:{PORT}/bucket/key', 'RawBLOB')",
    "SELECT * FROM iceberg('http://127.0.0.1:{PORT}/bucket/table/')",
    "SELECT * FROM deltaLake('http://127.0.0.1:{PORT}/bucket/table/')",
    "SELECT * FROM hudi('http://127.0.0.1:{PORT}/bucket/table/')",
    "SELECT * FROM hdfs('hdfs://127.0.0.1:{PORT}/x', 'RawBLOB')",
    "SELECT * FROM odbc('DSN=x', 'db', 't')",
    "SELECT * FROM jdbc('jdbc:mysql://127.0.0.1:{PORT}/db', 't')",
    "SELECT * FROM mongodb('127.0.0.1:{PORT}', 'db', 't', 'u', 'p', 'a String')",
    "SELECT * FROM redis('127.0.0.1:{PORT}', 'k', 'k String, v String')",
    "SELECT * FROM sqlite('{MASTER}', 't')",
    "SELECT * FROM arrowFlight('127.0.0.1:{PORT}', 'd')",
    "SELECT * FROM cluster('default', system.one)",
    "CREATE TABLE app.dist AS app.t ENGINE = Distributed('default', 'app', 't')",
    "CREATE TABLE app.pg (a String) ENGINE = PostgreSQL('127.0.0.1:{PORT}', 'db', 't', 'u', 'p')",
    "CREATE DATABASE pgdb ENGINE = PostgreSQL('127.0.0.1:{PORT}', 'db', 'u', 'p')",
    "CREATE DATABASE mydb ENGINE = MySQL('127.0.0.1:{PORT}', 'db', 'u', 'p')",
    "CREATE TABLE app.rep (a String) ENGINE = ReplicatedMergeTree('/t', 'r') ORDER BY a",
  ];

  it.each(['admin', 'developer', 'read-only'] as const)(
    'no host file is read and no listener reached, with a %s key',
    async (role) => {
      for (const attack of [...HOST_FILES, ...NETWORK]) {
        const answer = await attempt(s, keys[role], fill(attack));
        expect(answer.status, `${attack}: ${answer.body}`).toBe(400);
        expect(answer.body).not.toContain(masterKey);
        expect(answer.body).not.toContain(OTHER_MARKER);
      }
      expect(listener.connections()).toBe(0);
      expect(existsSync(outfile)).toBe(false);
      const tables = await sql(s, "SELECT name FROM system.tables WHERE database = 'app' ORDER BY name");
      expect(tables.map((t) => t.name)).toEqual(['keep', 't']);
    },
  );

  const WRITES = [
    'SELECT 1; DROP TABLE app.t; SELECT 1',
    "INSERT INTO app.t VALUES ('x')",
    "/* SELECT */ INSERT INTO app.t VALUES ('x')",
    'ALTER TABLE app.t DELETE WHERE 1',
    'TRUNCATE TABLE app.t',
    'DROP TABLE app.t',
    'CREATE TABLE app.x (a Int8) ENGINE = Memory',
    'SHOW TABLES; TRUNCATE TABLE app.t',
    'EXPLAIN SELECT 1; DROP TABLE app.keep',
    "INSERT INTO app.t SELECT 'x' FROM numbers(1)",
    'SET readonly = 0',
    // The value it has already: the engine's read-only mode lets it pass, Sluice does not.
    'SET readonly = 1',
    'SELECT 1 SETTINGS readonly = 0',
    'SELECT 1 SETTINGS max_threads = 1',
    'OPTIMIZE TABLE app.t FINAL',
    'RENAME TABLE app.t TO app.gone',
  ];

  it.each(['developer', 'read-only'] as const)(
    'a %s key writes nothing and changes no setting',
    async (role) => {
      for (const attack of WRITES) {
        const answer = await attempt(s, keys[role], attack);
        expect(answer.status, `${attack}: ${answer.body}`).toBe(400);
      }
      expect(await sql(s, 'SELECT v FROM app.t ORDER BY v')).toEqual([{ v: 'a' }, { v: 'b' }, { v: 'c' }]);
      const read = await attempt(s, keys[role], 'SELECT count() AS n FROM app.t');
      expect(read.json.result.rows).toEqual([{ n: 3 }]);
    },
  );

  it('one statement per request, also for an admin key; the engine parses, not a pattern', async () => {
    for (const attack of [
      "INSERT INTO app.keep VALUES ('x'); DROP TABLE app.keep",
      'SELECT 1; DROP TABLE app.keep',
      'SELECT 1 -- a comment\n; DROP TABLE app.keep',
      'SELECT $$;$$; DROP TABLE app.keep',
      'SELECT 1 /* /* */ */; DROP TABLE app.keep',
    ]) {
      const answer = await attempt(s, keys.admin, attack);
      expect(answer.status, attack).toBe(400);
    }
    expect(await sql(s, 'EXISTS TABLE app.keep')).toEqual([{ result: 1 }]);
    // One statement with what only looks like a second one inside a literal runs.
    const literal = await attempt(s, keys.admin, "SELECT 'a; DROP TABLE app.keep' AS text");
    expect(literal.json.result.rows).toEqual([{ text: 'a; DROP TABLE app.keep' }]);
  });

  it("the pipes' engine session keeps its settings whatever callers set", async () => {
    const service = await s.sluice.identity.getService(s.organizationId, s.serviceId);
    const engine = s.sluice.engines.engineFor(service);
    const settingsSql =
      "SELECT getSetting('max_threads') AS threads, getSetting('readonly') AS ro, getSetting('max_execution_time') AS limit";
    const before = (await engine.query(settingsSql)).rows;
    expect((await attempt(s, keys.admin, 'SET max_threads = 1')).status).toBe(200);
    expect((await attempt(s, keys.admin, 'SET max_execution_time = 1')).status).toBe(200);
    expect((await attempt(s, keys['read-only'], 'SET max_threads = 1')).status).toBe(400);
    expect((await engine.query(settingsSql)).rows).toEqual(before);
    // Nor does the next caller inherit what the last one set: each statement has its own connection.
    const next = await attempt(s, keys.admin, "SELECT getSetting('max_threads') AS threads");
    expect(next.json.result.rows[0].threads).toEqual(before[0]?.threads);
  });

  it('an Executable table may be defined, but runs nothing: programs are looked up in an empty directory', async () => {
    const create = await attempt(
      s,
      keys.admin,
      "CREATE TABLE app.ex (a String) ENGINE = Executable('../../../../../../bin/echo', TSV, (SELECT 'x'))",
    );
    expect(create.status).toBe(200);
    const run = await attempt(s, keys.admin, 'SELECT * FROM app.ex');
    expect(run.status).toBe(400);
    expect(run.json.error).toContain('must be inside user scripts folder');
    await sql(s, 'DROP TABLE app.ex');
  });

  it('the engine itself refuses the host and the network, for the runtime and for callers alike', async () => {
    const service = await s.sluice.identity.getService(s.organizationId, s.serviceId);
    const engine = s.sluice.engines.engineFor(service);
    for (const options of [{}, { caller: 'admin' as const }, { readonly: true }]) {
      for (const attack of [HOST_FILES[0], NETWORK[0]] as string[]) {
        const error = await engine.query(fill(attack), options).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(EngineError);
        expect(String((error as Error).message)).not.toContain(masterKey);
      }
    }
    expect(listener.connections()).toBe(0);
  });
});
