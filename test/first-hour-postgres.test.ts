import type pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  fillTable,
  openDatabase,
  POSTGRES_MAJORS,
  postgresPipeBody,
  type RunningPostgres,
} from './support/postgres.js';
import { usePostgresAndSluice } from './support/postgres-sluice.js';
import { createPipe, sql, waitForState } from './support/runtime.js';
import type { TestSluice } from './support/sluice.js';
import { waitFor } from './support/wait.js';

// A new user's first PostgreSQL pipe (issue 35, item 3), against real PostgreSQL servers of each
// tested major and a Sluice run as a user runs it: what the pipe's user lacks to make the
// publication Sluice makes is a 400 at create (and at a PATCH that adds tables) naming the
// statement to run; a privilege taken away later fails the pipe saying so; a server that is down
// leaves it Degraded while it retries. Every Degraded and Failed pipe shows lastError, lastErrorCode and lastErrorAt.

let server: RunningPostgres;
let s: TestSluice;
let client: pg.Client;
let port: number;
/** The pipe of `orders` that runs once its user has what it needs. */
let ordersPipe: string;

// The grantee is written <user>: a message never repeats the credentials, username included.
const GRANT_CREATE = 'GRANT CREATE ON DATABASE "shop" TO <user>';
const OWN_ORDERS = 'ALTER TABLE "public"."orders" OWNER TO <user>';

/** A pipe of `tables` of the database shop, read as the role replicator. */
function asReplicator(tables: string[], settings: Record<string, unknown> = {}, name = 'pg shop') {
  const body = postgresPipeBody('shop', port, tables, settings, { name });
  body.source.postgres.credentials = { username: 'replicator', password: 'replicator-secret' };
  return body;
}

async function create(body: unknown) {
  return s.request({ method: 'POST', url: s.pipesUrl, body });
}

async function pipeNames(): Promise<string[]> {
  const listed = await s.request({ method: 'GET', url: s.pipesUrl });
  return listed.json.result.map((p: { name: string }) => p.name);
}

/** Waits until the target of `table` holds `n` distinct rows. */
async function rowsIn(table: string, n: number, database = 'mirror_shop') {
  await waitFor(
    `${n} rows in ${database}.${table}`,
    async () => {
      const rows = await sql(s, `SELECT uniqExact(id) AS n FROM ${database}.${table} FINAL`).catch(() => []);
      return Number(rows[0]?.n) === n;
    },
    60_000,
  );
}

function state(id: string, command: string) {
  return s.request({ method: 'PATCH', url: `${s.pipesUrl}/${id}/state`, body: { command } });
}

describe.each(POSTGRES_MAJORS)("what a PostgreSQL pipe's user needs, on PostgreSQL %i", (major) => {
  usePostgresAndSluice(async (started) => {
    ({ server, s } = started);
    ({ client, port } = await openDatabase(server, 'shop'));
    await fillTable(client, 'orders', 50);
    await fillTable(client, 'items', 10);
    await client.query(`CREATE ROLE replicator LOGIN REPLICATION PASSWORD 'replicator-secret'`);
    await client.query('GRANT SELECT ON ALL TABLES IN SCHEMA public TO replicator');
  }, major);

  afterAll(async () => {
    await client?.end();
  });

  it('refuses a user without CREATE on the database or owning no table, naming the GRANT and the ALTER TABLE ... OWNER to run; a publicationName needs neither', async () => {
    const refused = await create(asReplicator(['orders']));
    expect(refused.statusCode).toBe(400);
    expect(refused.json.error).toContain(
      'source.postgres.credentials: the user may not create the publication',
    );
    expect(refused.json.error).toContain(GRANT_CREATE);
    expect(refused.json.error).toContain(
      'source.postgres.tableMappings[0].sourceTable: the user does not own public.orders (its owner is "postgres")',
    );
    expect(refused.json.error).toContain(OWN_ORDERS);
    expect(refused.json.error).toContain('settings.publicationName');
    expect(refused.json.code).toBe('SLUICE_ERR_VALIDATION');

    // With CREATE granted, only the ownership is left to name.
    await client.query('GRANT CREATE ON DATABASE shop TO replicator');
    const owner = await create(asReplicator(['orders']));
    expect(owner.statusCode).toBe(400);
    expect(owner.json.error).toContain(OWN_ORDERS);
    expect(owner.json.error).not.toContain('GRANT CREATE');
    expect(owner.json.code).toBe('SLUICE_ERR_VALIDATION');
    expect(await pipeNames()).toEqual([]);

    // A publication of the user's own: Sluice creates and alters none, so neither is needed.
    await client.query('REVOKE CREATE ON DATABASE shop FROM replicator');
    await client.query('CREATE PUBLICATION items_pub FOR TABLE items');
    const id = await createPipe(s, asReplicator(['items'], { publicationName: 'items_pub' }, 'pg items'));
    await waitForState(s, id, 'Running', 90_000);
    await rowsIn('items', 10);
    expect((await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${id}` })).statusCode).toBe(200);
  }, 180_000);

  it('runs once the user has CREATE and owns the table through a role; a PATCH adding a table it does not own is a 400 naming the ALTER TABLE ... OWNER', async () => {
    await client.query('GRANT CREATE ON DATABASE shop TO replicator');
    await client.query('CREATE ROLE shop_owners');
    await client.query('ALTER TABLE orders OWNER TO shop_owners');
    await client.query('GRANT shop_owners TO replicator');
    ordersPipe = await createPipe(s, asReplicator(['orders']));
    const running = await waitForState(s, ordersPipe, 'Running', 90_000);
    expect(running.lastError).toBeNull();
    expect(running.lastErrorCode).toBeNull();
    await rowsIn('orders', 50);

    expect((await state(ordersPipe, 'stop')).json.result.state).toBe('Stopped');
    const added = await s.request({
      method: 'PATCH',
      url: `${s.pipesUrl}/${ordersPipe}`,
      body: {
        source: { postgres: { tableMappingsToAdd: [{ sourceTable: 'items', targetTable: 'items' }] } },
      },
    });
    expect(added.statusCode).toBe(400);
    expect(added.json.error).toContain('source.postgres.tableMappings[1].sourceTable');
    expect(added.json.error).toContain('ALTER TABLE "public"."items" OWNER TO <user>');
    expect(added.json.code).toBe('SLUICE_ERR_VALIDATION');
    const pipe = await s.request({ method: 'GET', url: `${s.pipesUrl}/${ordersPipe}` });
    expect(pipe.json.result.source.postgres.tableMappings).toHaveLength(1);
  }, 180_000);

  it('fails a pipe whose user lost a privilege (the ownership of a table, which a resync needs; REPLICATION), with lastError; given back, it runs', async () => {
    await client.query('ALTER TABLE orders OWNER TO postgres');
    expect((await state(ordersPipe, 'resync')).statusCode).toBe(200);
    const failed = await waitForState(s, ordersPipe, 'Failed', 90_000);
    expect(failed.reason).toContain(OWN_ORDERS);
    expect(failed.lastError).toBe(failed.reason);
    expect(failed.lastErrorCode).toBe('SLUICE_ERR_SOURCE_PRIVILEGE');
    expect(Date.parse(failed.lastErrorAt)).toBeGreaterThan(Date.now() - 120_000);

    await client.query('ALTER TABLE orders OWNER TO shop_owners');
    expect((await state(ordersPipe, 'start')).statusCode).toBe(200);
    await waitForState(s, ordersPipe, 'Running', 90_000);
    await client.query(`INSERT INTO orders VALUES (51, 'after the owner came back')`);
    await rowsIn('orders', 51);

    // REPLICATION taken away: the stream's session is refused at the next start.
    expect((await state(ordersPipe, 'stop')).json.result.state).toBe('Stopped');
    await client.query('ALTER ROLE replicator NOREPLICATION');
    expect((await state(ordersPipe, 'start')).statusCode).toBe(200);
    const refused = await waitForState(s, ordersPipe, 'Failed', 90_000);
    expect(refused.reason).toContain('source.postgres.credentials: the user may not replicate');
    expect(refused.lastError).toBe(refused.reason);
    expect(refused.lastErrorCode).toBe('SLUICE_ERR_SOURCE_PRIVILEGE');
    await client.query('ALTER ROLE replicator REPLICATION');
    expect((await state(ordersPipe, 'start')).statusCode).toBe(200);
    await waitForState(s, ordersPipe, 'Running', 90_000);
    expect((await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${ordersPipe}` })).statusCode).toBe(200);
  }, 240_000);

  it('leaves a pipe whose server went down during its setup Degraded with lastError, retrying until it runs', async () => {
    const down = await openDatabase(server, 'down');
    await fillTable(down.client, 't', 20);
    // A transaction holding an id keeps the pipe's slot from being made (PostgreSQL waits for it):
    // the setup is under way, and nothing of the pipe's progress is stored, when the server stops.
    await down.client.query('CREATE TABLE held (id int)');
    await down.client.query('BEGIN');
    await down.client.query('INSERT INTO held VALUES (1)');
    const id = await createPipe(s, postgresPipeBody('down', port, ['t']));
    await waitForState(s, id, 'Setup', 60_000);
    await waitFor('the slot to wait for the open transaction', async () => {
      const waiting = await client.query(
        `SELECT 1 FROM pg_stat_activity WHERE query LIKE 'CREATE_REPLICATION_SLOT%' AND state = 'active'`,
      );
      return (waiting.rowCount ?? 0) > 0;
    });
    await server.halt();
    try {
      const degraded = await waitForState(s, id, 'Degraded', 60_000);
      expect(degraded.lastErrorCode).toBe('SLUICE_ERR_SOURCE_UNREACHABLE');
      expect(Date.parse(degraded.lastErrorAt)).toBeGreaterThan(Date.now() - 120_000);
      expect(degraded.reason).not.toContain("refused the pipe's user");
    } finally {
      await server.start();
    }
    await waitForState(s, id, 'Running', 90_000);
    await rowsIn('t', 20, 'mirror_down');
  }, 180_000);
});
