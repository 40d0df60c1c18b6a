import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServedSluice, serveEnv, sluiceServe } from '../support/cli.js';
import { oneTileDashboard, requestsSource } from '../support/dashboards.js';
import { basic } from '../support/sluice.js';
import { startListener } from './support.js';

/**
 * The operating system is the boundary (README, "Security"): every engine process runs in
 * bubblewrap's sandbox, seeing only its own service, without network or Sluice's environment.
 * Attacked as a tenant would with only the API of a real server process (`sluice serve`): an
 * admin, a developer and a read-only key of one organization, and that organization's team token
 * through sources and tiles. Canaries are planted beside the master key, in the environment and in
 * another organization's service; none of their bytes may come back, no directory outside the
 * caller's service may change, no loopback listener of the test may be reached.
 *
 * SLUICE_TEST_SANDBOX=off runs the same suite against engines without the sandbox (the risk
 * accepted), where the file and network attacks must fail: that is how the suite shows it tests
 * the sandbox rather than the friendly checks in front of it.
 */
const SANDBOX = process.env.SLUICE_TEST_SANDBOX === 'off' ? 'off' : 'auto';
const ROLES = ['admin', 'developer', 'read-only'] as const;
type Role = (typeof ROLES)[number];

describe('security: every engine process runs in an operating-system sandbox', () => {
  let dataDir: string;
  let server: ServedSluice;
  let listener: Awaited<ReturnType<typeof startListener>>;
  /** Random texts planted where no tenant may read them. */
  const canary = {
    beside: `canary-beside-master-key-${randomBytes(8).toString('hex')}`,
    environment: `canary-environment-${randomBytes(8).toString('hex')}`,
    victim: `canary-other-service-${randomBytes(8).toString('hex')}`,
    row: `canary-other-row-${randomBytes(8).toString('hex')}`,
  };
  let masterKey: string;
  const tenant = {
    organization: '',
    service: '',
    serviceDir: '',
    keys: {} as Record<Role, string>,
    token: '',
  };
  let victimDir: string;
  /** The victim's engine process (its command line names the victim's directory). */
  let victimPid: number;
  /** The victim service's id: its directory's name, which no answer to the tenant may hold. */
  let victimId: string;

  const call = async (auth: string, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: auth, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, text: await response.text() };
  };
  const operator = basic('sk_test_admin', 'test-admin-secret-0123456789');
  const json = async (auth: string, method: string, path: string, body?: unknown) => {
    const answer = await call(auth, method, path, body);
    expect(answer.status, answer.text).toBe(200);
    return JSON.parse(answer.text).result;
  };

  /** Each attack with its placeholders filled in. */
  const fill = (text: string) =>
    text
      .replaceAll('{MASTER}', join(dataDir, 'master.key'))
      .replaceAll('{BESIDE}', join(dataDir, 'canary.txt'))
      .replaceAll('{DATA}', dataDir)
      .replaceAll('{VICTIM}', victimDir)
      .replaceAll('{OWN}', tenant.serviceDir)
      .replaceAll('{PORT}', String(listener.port))
      .replaceAll('{SLUICE_PID}', String(server.child.pid))
      .replaceAll('{VICTIM_PID}', String(victimPid));

  /**
   * What no answer may hold: any canary, the master key, another service's row, and the other
   * service's id (its directory's name) unless the attack itself named it.
   */
  const leaked = (text: string, sent = '') =>
    [canary.beside, canary.environment, canary.victim, canary.row, masterKey, victimId].filter(
      (secret) => text.includes(secret) && !sent.includes(secret),
    );

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sluice-sandbox-'));
    listener = await startListener();
    await writeFile(join(dataDir, 'canary.txt'), canary.beside);
    server = await sluiceServe(
      serveEnv(dataDir, {
        SLUICE_SANDBOX: SANDBOX,
        ...(SANDBOX === 'off' ? { SLUICE_ALLOW_UNSANDBOXED_SQL: 'true' } : {}),
        SLUICE_TEST_CANARY: canary.environment,
      }),
    );
    const health = JSON.parse(await (await fetch(`${server.url}/health`)).text());
    if (SANDBOX === 'auto' && !health.sandbox?.sandboxed) {
      throw new Error(
        `the engines run without a sandbox here (${health.sandbox?.detail}); install bubblewrap (apt-get install bubblewrap) and run the tests again`,
      );
    }
    masterKey = (await readFile(join(dataDir, 'master.key'), 'utf8')).trim();
    // A victim organization with rows of its own and a canary in its service's directory.
    const victim = await json(operator, 'POST', '/v1/organizations', { name: 'victim' });
    const victimAuth = basic(victim.key.id, victim.key.secret);
    const victimService = await json(
      victimAuth,
      'POST',
      `/v1/organizations/${victim.organization.id}/services`,
      {
        name: 'private',
      },
    );
    const victimQuery = `/v1/organizations/${victim.organization.id}/services/${victimService.id}/query`;
    await json(victimAuth, 'POST', victimQuery, {
      sql: 'CREATE TABLE default.secrets (v String) ENGINE = MergeTree ORDER BY v',
    });
    await json(victimAuth, 'POST', victimQuery, {
      sql: `INSERT INTO default.secrets VALUES ('${canary.row}')`,
    });
    victimDir = join(dataDir, 'services', victimService.id);
    victimId = victimService.id;
    await writeFile(join(victimDir, 'canary.txt'), canary.victim);
    victimPid = await processNaming(victimDir);
    // The attacking organization: its admin, developer and read-only keys, and a team token.
    const created = await json(operator, 'POST', '/v1/organizations', { name: 'tenant' });
    tenant.organization = created.organization.id;
    const admin = basic(created.key.id, created.key.secret);
    tenant.service = (
      await json(admin, 'POST', `/v1/organizations/${tenant.organization}/services`, { name: 'own' })
    ).id;
    tenant.serviceDir = join(dataDir, 'services', tenant.service);
    tenant.keys.admin = admin;
    for (const role of ['developer', 'read-only'] as const) {
      const key = await json(admin, 'POST', `/v1/organizations/${tenant.organization}/keys`, {
        role,
        name: role,
      });
      tenant.keys[role] = basic(key.id, key.secret);
    }
    const team = await json(admin, 'POST', `/v1/organizations/${tenant.organization}/teams`, {
      name: 'analysts',
    });
    const token = await json(
      admin,
      'POST',
      `/v1/organizations/${tenant.organization}/teams/${team.id}/tokens`,
      {
        user: 'ann',
      },
    );
    tenant.token = `Bearer ${token.token}`;
    await json(admin, 'POST', tenantQuery(), { sql: 'CREATE DATABASE IF NOT EXISTS app' });
    await json(admin, 'POST', tenantQuery(), {
      sql: "CREATE TABLE app.requests (ts DateTime('UTC'), host String) ENGINE = MergeTree ORDER BY ts",
    });
    // A link inside the tenant's own directory to what lies outside it.
    await symlink(join(dataDir, 'master.key'), join(tenant.serviceDir, 'link-to-master.key'));
    await symlink(victimDir, join(tenant.serviceDir, 'link-to-victim'));
  }, 180_000);
  afterAll(async () => {
    server?.child.kill('SIGTERM');
    await listener?.close();
    await new Promise((resolve) => setTimeout(resolve, 500));
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  const tenantQuery = () => `/v1/organizations/${tenant.organization}/services/${tenant.service}/query`;

  const FILES = [
    // The ordinary function file(path), in every spelling the parser takes.
    "SELECT file('{MASTER}') AS x",
    "SELECT file('{BESIDE}') AS x",
    "SELECT `file`('{BESIDE}') AS x",
    'SELECT "file"(\'{BESIDE}\') AS x',
    "SELECT FILE('{BESIDE}') AS x",
    "SELECT file/* c */('{BESIDE}') AS x",
    "SELECT file('{VICTIM}/canary.txt') AS x",
    "SELECT file('/proc/self/environ') AS x",
    "SELECT file('/proc/{SLUICE_PID}/environ') AS x",
    "SELECT file('/proc/{VICTIM_PID}/cmdline') AS x",
    "SELECT file('/proc/{VICTIM_PID}/root{VICTIM}/canary.txt') AS x",
    "SELECT file('/proc/self/root{BESIDE}') AS x",
    "SELECT file('{OWN}/link-to-master.key') AS x",
    "SELECT file('{OWN}/link-to-victim/canary.txt') AS x",
    "SELECT file('{OWN}/../../canary.txt') AS x",
    // Table functions and engines that take a path.
    "SELECT * FROM file('{BESIDE}', 'RawBLOB')",
    "SELECT * FROM file('{VICTIM}/store/*/*/*/*.bin', 'RawBLOB')",
    "SELECT * FROM file('{OWN}/link-to-victim/canary.txt', 'RawBLOB')",
    "SELECT * FROM url('file://{BESIDE}', 'RawBLOB')",
    "CREATE TABLE app.f (a String) ENGINE = File(RawBLOB, '{BESIDE}')",
    "CREATE DATABASE fsdb ENGINE = Filesystem('{DATA}')",
    "CREATE TABLE app.rocks (k String, v String) ENGINE = EmbeddedRocksDB(0, '{VICTIM}') PRIMARY KEY k",
    "CREATE TABLE app.disk (a String) ENGINE = MergeTree ORDER BY a SETTINGS disk = disk(type = local, path = '{VICTIM}/')",
    "CREATE TABLE app.newdir (a String) ENGINE = MergeTree ORDER BY a SETTINGS disk = disk(type = local, path = '{DATA}/made-by-a-tenant/')",
    "SELECT * FROM file('/dev/shm/../../{BESIDE}', 'RawBLOB')",
  ];
  const NETWORK = [
    "CREATE TABLE app.s3 (a String) ENGINE = MergeTree ORDER BY a SETTINGS disk = disk(type = s3_plain_rewritable, endpoint = 'http://127.0.0.1:{PORT}/bucket/data/', access_key_id = 'a', secret_access_key = 'b')",
    "CREATE TABLE app.web (a String) ENGINE = MergeTree ORDER BY a SETTINGS disk = disk(type = web, endpoint = 'http://127.0.0.1:{PORT}/')",
    "SELECT * FROM url('http://127.0.0.1:{PORT}/', 'RawBLOB')",
    "SELECT * FROM remote('127.0.0.1:{PORT}', system.one)",
  ];

  describe.each(ROLES)('with a %s key', (role) => {
    it.each([...FILES, ...NETWORK])('%s', async (attack) => {
      const before = await filesOutside(dataDir, tenant.serviceDir);
      const sql = fill(attack);
      const answer = await call(tenant.keys[role], 'POST', tenantQuery(), { sql });
      expect(leaked(answer.text, sql), answer.text).toEqual([]);
      // A table made with a path would act on it later: it must not act outside the service.
      if (answer.status === 200 && /^CREATE TABLE app\.(\w+)/.test(sql)) {
        const table = /^CREATE TABLE app\.(\w+)/.exec(sql)?.[1];
        await call(tenant.keys[role], 'POST', tenantQuery(), { sql: `TRUNCATE TABLE app.${table}` });
        await call(tenant.keys[role], 'POST', tenantQuery(), { sql: `DROP TABLE app.${table} SYNC` });
      }
      if (answer.status === 200 && sql.startsWith('CREATE DATABASE fsdb')) {
        const read = await call(tenant.keys[role], 'POST', tenantQuery(), {
          sql: 'SELECT * FROM fsdb.`canary.txt`',
        });
        expect(leaked(read.text), read.text).toEqual([]);
        await call(tenant.keys[role], 'POST', tenantQuery(), { sql: 'DROP DATABASE fsdb' });
      }
      expect(listener.connections(), 'a loopback listener of the test was reached').toBe(0);
      expect(await changedSince(before), 'files outside the tenant’s service changed').toEqual([]);
    });
  });

  /** A team token's way to SQL: a source's timestamp expression, a tile's where and groupBy. */
  const EXPRESSIONS = [
    "`file`('{BESIDE}')",
    '"file"(\'{BESIDE}\')',
    "file('{VICTIM}/canary.txt')",
    "file('/proc/{SLUICE_PID}/environ')",
    "toDateTime(length(file('{BESIDE}')))",
  ];

  it.each(EXPRESSIONS)('a team token through a source and a tile: %s', async (expression) => {
    const before = await filesOutside(dataDir, tenant.serviceDir);
    const text = fill(expression);
    const v2 = (method: string, path: string, body: unknown) =>
      call(tenant.token, method, `/api/v2${path}`, body);
    const source = await v2(
      'POST',
      '/sources',
      requestsSource(tenant.service, { timestampValueExpression: text }),
    );
    expect(leaked(source.text, text), source.text).toEqual([]);
    const plain = await v2('POST', '/sources', requestsSource(tenant.service));
    expect(plain.status, plain.text).toBe(200);
    const sourceId = JSON.parse(plain.text).data.id;
    for (const body of [
      oneTileDashboard(sourceId, { where: `${text} != ''`, whereLanguage: 'sql' }),
      oneTileDashboard(sourceId, {}, { groupBy: text }),
    ]) {
      const answer = await v2('POST', '/dashboards', body);
      expect(leaked(answer.text, text), answer.text).toEqual([]);
    }
    expect(await changedSince(before)).toEqual([]);
  });

  it('the engine process sees none of Sluice’s environment and no other service', async () => {
    const processes = await call(tenant.keys.admin, 'POST', tenantQuery(), {
      sql: "SELECT _path, file(_path) AS text FROM file('/proc/*/cmdline', 'RawBLOB')",
    });
    expect(leaked(processes.text), processes.text).toEqual([]);
  });

  /** Files outside the tenant's service whose presence or size changed since `before`. */
  async function changedSince(before: Map<string, number>): Promise<string[]> {
    const now = await filesOutside(dataDir, tenant.serviceDir);
    const changed: string[] = [];
    for (const [path, size] of before) if (now.get(path) !== size && !volatile(path)) changed.push(path);
    for (const path of now.keys()) if (!before.has(path) && !volatile(path)) changed.push(path);
    return changed;
  }
});

/** The first process whose command line names `text`. */
async function processNaming(text: string): Promise<number> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(text)) return Number(entry);
  }
  throw new Error(`no process names ${text}`);
}

/** What changes by itself while the server runs: the metadata store, the source readers, the lock. */
function volatile(path: string): boolean {
  return /\/(metadata|readers)\/|\/sluice\.lock$/.test(path);
}

async function filesOutside(root: string, own: string): Promise<Map<string, number>> {
  const files = new Map<string, number>();
  const walk = async (dir: string) => {
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const path = join(dir, entry.name);
      if (path === own) continue;
      if (entry.isDirectory()) {
        files.set(`${path}/`, 0);
        await walk(path);
      } else {
        const text = await readFile(path).catch(() => undefined);
        files.set(path, text?.length ?? -1);
      }
    }
  };
  await walk(root);
  return files;
}
