import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture } from './support/clients.js';
import {
  fillTable,
  openDatabase,
  postgresPipeBody,
  type RunningPostgres,
  startPostgres,
} from './support/postgres.js';
import { sql, waitForState } from './support/runtime.js';
import { startSluice, type TestSluice } from './support/sluice.js';
import { startTcpTap, type TcpTap } from './support/tcp-tap.js';
import { waitFor } from './support/wait.js';

/**
 * A PostgreSQL pipe updated as the hosted service's Terraform provider updates it
 * (ClickHouse/terraform-provider-clickhouse, internal/service/clickhouse/resource/clickpipe.go,
 * Update: the whole `postgres` object with host, port, database and every computed setting; on a
 * 400 saying "must be paused to edit" it pauses the pipe and sends the update again), against
 * real PostgreSQL servers and a Sluice run as a user runs it.
 */
describe('a Terraform update of a PostgreSQL pipe', () => {
  let s: TestSluice;
  let server: RunningPostgres;
  let other: RunningPostgres;
  let client: pg.Client;
  let port: number;
  let tap: TcpTap;
  let url: string;

  beforeAll(async () => {
    [server, other] = await Promise.all([startPostgres(), startPostgres()]);
    ({ client, port } = await openDatabase(server, 'shop'));
    await server.createDatabase('elsewhere');
    await (await openDatabase(other, 'shop')).client.end();
    await fillTable(client, 'orders', 100);
    await client.query(`CREATE ROLE replicator LOGIN REPLICATION PASSWORD 'first'`);
    await client.query('ALTER TABLE orders OWNER TO replicator');
    await client.query('GRANT CREATE ON DATABASE shop TO replicator');
    // The same server at a second address (as after a DNS or load balancer change).
    tap = await startTcpTap(`http://127.0.0.1:${port}`);
    s = await startSluice({ runtime: true });
    const body = postgresPipeBody('shop', port, ['orders']);
    body.source.postgres.credentials = { username: 'replicator', password: 'first' };
    const created = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(created.statusCode, created.body).toBe(200);
    url = `${s.pipesUrl}/${created.json.result.id}`;
    await waitForState(s, created.json.result.id, 'Running');
    await waitForRows(100);
  });
  afterAll(async () => {
    await s?.close();
    await tap?.stop();
    await client?.end();
    await Promise.all([server?.stop(), other?.stop()]);
  });

  async function waitForRows(n: number) {
    return waitFor(`${n} rows`, async () => {
      const [row] = await sql(s, 'SELECT count() AS n, uniqExact(id) AS ids FROM mirror_shop.orders FINAL');
      return Number(row?.n) === n ? row : undefined;
    });
  }

  /** Terraform's update body: the whole source as it stands, with these changes. */
  async function update(changes: Record<string, unknown>, settings: Record<string, unknown> = {}) {
    const body = await fixture('terraform-postgres-update');
    const postgres = body.source.postgres;
    const credentials = { username: 'replicator', password: 'second' };
    Object.assign(postgres, { host: '127.0.0.1', port, database: 'shop', credentials }, changes);
    Object.assign(postgres.settings, { syncIntervalSeconds: 1 }, settings);
    return s.request({ method: 'PATCH', url, body });
  }

  it('a password rotation passes with every computed setting sent back; a password the server refuses is a 400', async () => {
    await client.query(`ALTER ROLE replicator PASSWORD 'second'`);
    const rotated = await update({});
    expect(rotated.statusCode, rotated.body).toBe(200);
    expect(rotated.body).not.toContain('second');
    const wrong = await update({ credentials: { username: 'replicator', password: 'third' } });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json.error).toContain('source.postgres.credentials');
    expect(wrong.json.code).toBe('SLUICE_ERR_VALIDATION');
    // The pipe reads on with the rotated password.
    await client.query(`INSERT INTO orders VALUES (101, 'after the rotation')`);
    await waitForRows(101);
  });

  it('a new address of a running pipe is a 400 with the words Terraform looks for; stopped, the same server at another address is taken', async () => {
    const running = await update({ port: tap.port });
    expect(running.statusCode).toBe(400);
    expect(running.json.error).toContain('must be paused to edit port');
    expect(running.json.code).toBe('SLUICE_ERR_PIPE_IMMUTABLE');
    const mapping = { sourceSchemaName: 'public', sourceTable: 'orders', targetTable: 'orders_again' };
    const added = await update({ tableMappingsToAdd: [mapping] });
    expect(added.statusCode).toBe(400);
    expect(added.json.error).toContain('must be paused to edit table mappings');
    expect(added.json.code).toBe('SLUICE_ERR_PIPE_IMMUTABLE');
    const id = url.split('/').at(-1) as string;
    const stop = await s.request({ method: 'PATCH', url: `${url}/state`, body: { command: 'stop' } });
    expect(stop.statusCode, stop.body).toBe(200);
    await waitForState(s, id, 'Stopped');
    await client.query(`INSERT INTO orders VALUES (102, 'while stopped')`);
    const moved = await update({ port: tap.port });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(moved.json.result.source.postgres.port).toBe(tap.port);
    const start = await s.request({ method: 'PATCH', url: `${url}/state`, body: { command: 'start' } });
    expect(start.statusCode, start.body).toBe(200);
    await client.query(`INSERT INTO orders VALUES (103, 'after the move')`);
    // From the same position: nothing lost, nothing twice.
    expect(await waitForRows(103)).toEqual({ n: 103, ids: 103 });
  });

  it('another server, or another database, is a 400 that says a resync is needed, and nothing changes', async () => {
    const id = url.split('/').at(-1) as string;
    await s.request({ method: 'PATCH', url: `${url}/state`, body: { command: 'stop' } });
    await waitForState(s, id, 'Stopped');
    const otherPort = Number(new URL(other.url).port);
    await (await openDatabase(other, 'roles')).client
      .query(`CREATE ROLE replicator LOGIN REPLICATION PASSWORD 'second'`)
      .catch(() => {});
    const elsewhere = await update({ port: otherPort });
    expect(elsewhere.statusCode).toBe(400);
    expect(elsewhere.json.error).toContain(
      `source.postgres.host: 127.0.0.1:${otherPort}/shop is another server`,
    );
    expect(elsewhere.json.error).toContain('needs a resync');
    expect(elsewhere.json.code).toBe('SLUICE_ERR_VALIDATION');
    const database = await update({ port: tap.port, database: 'elsewhere' });
    expect(database.statusCode).toBe(400);
    expect(database.json.error).toContain("belongs to the database 'shop', not 'elsewhere'");
    expect(database.json.error).toContain('needs a resync');
    expect(database.json.code).toBe('SLUICE_ERR_VALIDATION');
    const after = await s.request({ method: 'GET', url });
    expect(after.json.result.source.postgres).toMatchObject({ port: tap.port, database: 'shop' });
  });
});
