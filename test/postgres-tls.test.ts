import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KafkaCertificates, makeCertificates } from './support/kafka/certs.js';
import { fillTable, postgresPipeBody, type RunningPostgres, startPostgres } from './support/postgres.js';
import { createPipe, sql, waitForState } from './support/runtime.js';
import { startSluice, type TestSluice } from './support/sluice.js';
import { untilEqual } from './support/wait.js';

// A real PostgreSQL server that accepts TLS with a certificate of a private CA (made by openssl,
// naming localhost and 127.0.0.1), replicated by a Sluice run as a user runs it.

let certsDir: string;
let certs: KafkaCertificates;
let server: RunningPostgres;
let s: TestSluice;

beforeAll(async () => {
  certsDir = await mkdtemp(join(tmpdir(), 'sluice-pg-tls-'));
  certs = await makeCertificates(certsDir);
  server = await startPostgres(undefined, {
    tls: { certFile: certs.serverCertFile, keyFile: certs.serverKeyFile },
  });
  s = await startSluice({ runtime: true });
}, 120_000);

afterAll(async () => {
  await s?.close();
  await server?.stop();
  if (certsDir) await rm(certsDir, { recursive: true, force: true });
});

describe('postgres pipes over TLS', () => {
  it('trust the CA given, check the name in tlsHost, and replicate the snapshot and changes over TLS', async () => {
    const url = await server.createDatabase('secure');
    const port = Number(new URL(url).port);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await fillTable(client, 't', 3000);
    // The pipe's user may not connect without TLS (pg_hba.conf): a session of Sluice's in plain
    // text, a snapshot range's or the replication stream's, would be refused and fail the pipe.
    await client.query(`CREATE ROLE tls_only LOGIN SUPERUSER PASSWORD 'tls_only'`);
    const { rows } = await client.query<{ hba_file: string }>('SHOW hba_file');
    const hbaFile = (rows[0] as { hba_file: string }).hba_file;
    await writeFile(hbaFile, `hostnossl all tls_only all reject\n${await readFile(hbaFile, 'utf8')}`);
    await client.query('SELECT pg_reload_conf()');
    const plain = new pg.Client({
      host: '127.0.0.1',
      port,
      database: 'secure',
      user: 'tls_only',
      password: 'tls_only',
    });
    plain.on('error', () => {});
    await expect(plain.connect()).rejects.toThrow(/no encryption/);
    await plain.end().catch(() => {});

    const body = postgresPipeBody('secure', port, ['t'], { snapshotNumRowsPerPartition: 1000 });
    const withTls = (tls: Record<string, unknown>, destination = body.destination) => ({
      ...body,
      source: {
        postgres: {
          ...body.source.postgres,
          credentials: { username: 'tls_only', password: 'tls_only' },
          disableTls: false,
          ...tls,
        },
      },
      destination,
    });
    const create = (b: unknown) => s.request({ method: 'POST', url: s.pipesUrl, body: b });

    const untrusted = await create(withTls({}));
    expect(untrusted.statusCode).toBe(400);
    expect(untrusted.json.error).toContain('source.postgres.caCertificate');
    expect(untrusted.json.error).toContain('not trusted');
    expect(untrusted.json.code).toBe('SLUICE_ERR_VALIDATION');
    // The certificate names localhost and 127.0.0.1: a tlsHost it does not carry is refused,
    // whether host is an address or a name.
    for (const host of ['127.0.0.1', 'localhost']) {
      const elsewhere = await create(
        withTls({ host, caCertificate: certs.caPem, tlsHost: 'db.elsewhere.example' }),
      );
      expect(elsewhere.statusCode, host).toBe(400);
      expect(elsewhere.json.error).toContain('source.postgres.tlsHost');
      expect(elsewhere.json.error).toContain('db.elsewhere.example');
      expect(elsewhere.json.code, host).toBe('SLUICE_ERR_VALIDATION');
    }
    expect((await s.request({ method: 'GET', url: s.pipesUrl })).json.result).toEqual([]);

    // Without verification the same server is accepted (a snapshot only, into its own database).
    const unchecked = await createPipe(
      s,
      withTls(
        {
          skipCertVerification: true,
          settings: { ...body.source.postgres.settings, replicationMode: 'snapshot' },
        },
        { database: 'unchecked' },
      ),
    );
    await waitForState(s, unchecked, 'Completed', 90_000);
    const [copied] = await sql(s, 'SELECT count() AS n FROM unchecked.t');
    expect(Number(copied?.n)).toBe(3000);

    const id = await createPipe(s, withTls({ caCertificate: certs.caPem, tlsHost: 'localhost' }));
    await waitForState(s, id, 'Running', 90_000);
    await client.query(`UPDATE t SET v = 'changed' WHERE id <= 10`);
    await client.query('DELETE FROM t WHERE id > 2990');
    await client.query(`INSERT INTO t VALUES (5000, 'new')`);
    const source = (await client.query('SELECT id, v FROM t ORDER BY id')).rows;
    await untilEqual(
      () => sql(s, 'SELECT id, v FROM mirror_secure.t FINAL WHERE _pipe_is_deleted = 0 ORDER BY id'),
      source,
    );
    // The replication stream is among the encrypted sessions the server reports.
    const sessions = await client.query<{ backend_type: string; ssl: boolean }>(
      `SELECT a.backend_type, s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
        WHERE a.application_name = 'sluice'`,
    );
    expect(sessions.rows).toContainEqual({ backend_type: 'walsender', ssl: true });
    expect(sessions.rows.filter((row) => !row.ssl)).toEqual([]);

    expect((await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${id}` })).statusCode).toBe(200);
    const slots = await client.query(
      'SELECT 1 FROM pg_replication_slots WHERE database = current_database()',
    );
    expect(slots.rows).toEqual([]);
    await client.end();
  }, 180_000);
});
