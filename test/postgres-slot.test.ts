import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  fillTable,
  openDatabase,
  POSTGRES_MAJORS,
  postgresPipeBody,
  type RunningPostgres,
} from './support/postgres.js';
import { usePostgresAndSluice } from './support/postgres-sluice.js';
import { createPipe, sql, statusOf, waitForState } from './support/runtime.js';
import type { TestSluice } from './support/sluice.js';
import { untilEqual, waitFor } from './support/wait.js';

// What ends a postgres pipe at the source, on a real PostgreSQL server and a Sluice run as a user
// runs it: a replication slot the server invalidated or someone dropped, a mapped table dropped
// while the snapshot copies it. Each fails the pipe with a reason saying how to bring it back,
// and doing so does.

let server: RunningPostgres;
let s: TestSluice;

const database = (name: string) => openDatabase(server, name);

function command(id: string, command: string) {
  return s.request({ method: 'PATCH', url: `${s.pipesUrl}/${id}/state`, body: { command } });
}

async function stop(id: string): Promise<void> {
  expect((await command(id, 'stop')).statusCode).toBe(200);
  await waitForState(s, id, 'Stopped', 30_000);
}

const mirror = (db: string, table: string) =>
  sql(s, `SELECT id, v FROM mirror_${db}.${table} FINAL WHERE _pipe_is_deleted = 0 ORDER BY id`);
const rowsOf = async (client: pg.Client, table: string) =>
  (await client.query(`SELECT id, v FROM ${table} ORDER BY id`)).rows;

/**
 * Makes the server invalidate `slot` (held by a stopped pipe): with max_slot_wal_keep_size at its
 * least, a few WAL segments and a checkpoint put the slot past it. Rows of `table` are written to
 * make the WAL (ids above 2000).
 */
async function invalidate(client: pg.Client, slot: string, table: string): Promise<void> {
  await client.query(`ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'`);
  await client.query('SELECT pg_reload_conf()');
  try {
    await waitFor(
      `the server to invalidate ${slot}`,
      async () => {
        await client.query(
          `INSERT INTO ${table} VALUES (2000 + (random() * 1000000)::int, 'wal') ON CONFLICT DO NOTHING`,
        );
        await client.query('SELECT pg_switch_wal()');
        await client.query('CHECKPOINT');
        const slots = await client.query('SELECT wal_status FROM pg_replication_slots WHERE slot_name = $1', [
          slot,
        ]);
        return slots.rows[0]?.wal_status === 'lost';
      },
      60_000,
    );
  } finally {
    await client.query('ALTER SYSTEM RESET max_slot_wal_keep_size');
    await client.query('SELECT pg_reload_conf()');
  }
}

describe.each(POSTGRES_MAJORS)('postgres pipes whose slot or table is gone, on PostgreSQL %i', (major) => {
  usePostgresAndSluice((started) => ({ server, s } = started), major);

  it('a slot the server invalidated (max_slot_wal_keep_size) fails the pipe saying resync; a resync brings the changes back', async () => {
    const { client, port } = await database('lost');
    await fillTable(client, 't', 500);
    const id = await createPipe(s, postgresPipeBody('lost', port, ['t']));
    await waitForState(s, id, 'Running', 90_000);
    await client.query(`INSERT INTO t VALUES (1001, 'while running')`);
    await untilEqual(() => mirror('lost', 't'), await rowsOf(client, 't'));
    const running = await waitFor('the slot measured', async () => {
      const status = await statusOf(s, id);
      return status.replication.slotWalStatus ? status : undefined;
    });
    expect(running.replication.slotWalStatus).toBe('reserved');
    const slot = running.replication.slot as string;

    // Stopped, the slot holds WAL, as the stopped pipe's status shows; past max_slot_wal_keep_size
    // a checkpoint invalidates it.
    await stop(id);
    const stopped = await waitFor('the stopped pipe to show its slot', async () => {
      const status = await statusOf(s, id);
      return status.replication?.slotWalStatus ? status : undefined;
    });
    expect(stopped.replication).toMatchObject({ phase: 'changes', slot, slotWalStatus: 'reserved' });
    const lagAtStop = stopped.replication.slotLagBytes as number;
    await client.query(`INSERT INTO t VALUES (1002, 'while stopped')`);
    await invalidate(client, slot, 't');

    // The stopped pipe's status shows it (asked of the server at most every 10 s).
    const lost = await waitFor(
      'the status to show the slot lost',
      async () => {
        const status = await statusOf(s, id);
        return status.replication?.slotWalStatus === 'lost' ? status : undefined;
      },
      30_000,
    );
    expect(lost.replication.slotLagBytes).toBeGreaterThan(lagAtStop + 1024 * 1024);
    // So does /metrics, where an operator watches a stopped pipe's slot grow.
    const scraped = await waitFor("the metrics to show the stopped pipe's slot", async () => {
      const metrics = (await s.request({ method: 'GET', url: '/metrics' })).body;
      const line = `sluice_pipe_replication_slot_lag_bytes{pipe_id="${id}",slot="${slot}"} `;
      const at = metrics.indexOf(line);
      return at >= 0 ? Number.parseInt(metrics.slice(at + line.length), 10) : undefined;
    });
    expect(scraped).toBeGreaterThan(lagAtStop + 1024 * 1024);

    expect((await command(id, 'start')).statusCode).toBe(200);
    const failed = await waitForState(s, id, 'Failed', 60_000);
    expect(failed.reason).toContain(`replication slot '${slot}' was invalidated`);
    expect(failed.reason).toContain('max_slot_wal_keep_size');
    expect(failed.reason).toContain('resync the pipe');
    expect(failed.lastErrorCode).toBe('SLUICE_ERR_SOURCE_SETUP');

    // A resync makes a new slot and copies the table again: what the lost slot held arrives.
    expect((await command(id, 'resync')).statusCode).toBe(200);
    await waitForState(s, id, 'Running', 90_000);
    await client.query(`INSERT INTO t VALUES (1003, 'after the resync')`);
    await untilEqual(() => mirror('lost', 't'), await rowsOf(client, 't'));
    expect((await statusOf(s, id)).replication.slot).toBe(slot);
    await client.end();
  }, 240_000);

  it('a slot dropped at the source fails the pipe saying resync; a resync brings it back', async () => {
    const { client, port } = await database('dropped');
    await fillTable(client, 't', 300);
    const id = await createPipe(s, postgresPipeBody('dropped', port, ['t']));
    const running = await waitForState(s, id, 'Running', 90_000);
    const slot = running.replication.slot as string;
    await stop(id);
    // The stream's session may still be ending: the server says the slot is active until it has.
    await waitFor('the slot dropped', async () => {
      await client.query('SELECT pg_drop_replication_slot($1)', [slot]);
      return true;
    });
    await client.query(`INSERT INTO t VALUES (1001, 'while the slot was gone')`);

    expect((await command(id, 'start')).statusCode).toBe(200);
    const failed = await waitForState(s, id, 'Failed', 60_000);
    expect(failed.reason).toContain(`replication slot '${slot}' no longer exists at the source`);
    expect(failed.reason).toContain('resync the pipe');
    expect(failed.lastErrorCode).toBe('SLUICE_ERR_SOURCE_SETUP');

    expect((await command(id, 'resync')).statusCode).toBe(200);
    await waitForState(s, id, 'Running', 90_000);
    await untilEqual(() => mirror('dropped', 't'), await rowsOf(client, 't'));
    await client.end();
  }, 180_000);

  it('cdc_only with a slot the user named: a resync while that slot is lost fails before emptying anything', async () => {
    const { client, port } = await database('named');
    await fillTable(client, 't', 0);
    const body = postgresPipeBody('named', port, ['t'], {
      replicationMode: 'cdc_only',
      replicationSlotName: 'users_slot',
    });
    const id = await createPipe(s, body);
    await waitForState(s, id, 'Running', 90_000);
    await client.query(`INSERT INTO t VALUES (1, 'followed'), (2, 'followed')`);
    await untilEqual(() => mirror('named', 't'), await rowsOf(client, 't'));
    await stop(id);
    await invalidate(client, 'users_slot', 't');

    expect((await command(id, 'start')).statusCode).toBe(200);
    const failed = await waitForState(s, id, 'Failed', 60_000);
    expect(failed.reason).toContain("replication slot 'users_slot' was invalidated");
    expect(failed.reason).toContain('drop the slot at the source');
    expect(failed.reason).toContain('empties the targets');
    expect(failed.lastErrorCode).toBe('SLUICE_ERR_SOURCE_SETUP');
    // A resync would take the lost slot as it is: it fails first, and the target keeps its rows.
    expect((await command(id, 'resync')).statusCode).toBe(200);
    const again = await waitForState(s, id, 'Failed', 60_000);
    expect(again.reason).toContain("replication slot 'users_slot' was invalidated");
    expect(again.lastErrorCode).toBe('SLUICE_ERR_SOURCE_SETUP');
    expect((await mirror('named', 't')).map((row) => row.id)).toEqual([1, 2]);

    // With the slot dropped, the resync makes it again: the target starts empty, then follows.
    await client.query(`SELECT pg_drop_replication_slot('users_slot')`);
    expect((await command(id, 'resync')).statusCode).toBe(200);
    await waitForState(s, id, 'Running', 90_000);
    await client.query(`INSERT INTO t VALUES (3, 'after the resync')`);
    await untilEqual(() => mirror('named', 't'), [{ id: 3, v: 'after the resync' }]);
    await client.end();
  }, 180_000);

  it('a table dropped during the snapshot fails the pipe naming it; without its mapping the rest goes on', async () => {
    const { client, port } = await database('gone');
    await fillTable(client, 'a', 60_000);
    await fillTable(client, 'b', 200);
    const id = await createPipe(
      s,
      postgresPipeBody('gone', port, ['a', 'b'], {
        snapshotNumRowsPerPartition: 1000,
        initialLoadParallelism: 1,
      }),
    );
    await waitFor(
      'the first ranges of the snapshot',
      async () => {
        const status = await statusOf(s, id);
        return status.state === 'Snapshot' && status.tables?.[0]?.snapshotRangesDone >= 1
          ? status
          : undefined;
      },
      90_000,
      20,
    );
    await client.query('DROP TABLE a');
    // Straight to Failed: the range's COPY says the table is gone (a retry would read it again
    // for nothing, Degraded for a second at least).
    const states = new Set<string>();
    const failed = await waitFor(
      'the pipe to fail',
      async () => {
        const status = await statusOf(s, id);
        states.add(status.state);
        return status.state === 'Failed' ? status : undefined;
      },
      60_000,
      50,
    );
    expect([...states]).not.toContain('Degraded');
    expect(failed.reason).toContain('the source table public.a no longer exists');
    expect(failed.reason).toContain('tableMappingsToRemove');
    expect(failed.lastErrorCode).toBe('SLUICE_ERR_SOURCE_TABLE_GONE');

    await stop(id);
    const edited = await s.request({
      method: 'PATCH',
      url: `${s.pipesUrl}/${id}`,
      body: { source: { postgres: { tableMappingsToRemove: [{ sourceTable: 'a', targetTable: 'a' }] } } },
    });
    expect(edited.statusCode, JSON.stringify(edited.json)).toBe(200);
    expect((await command(id, 'start')).statusCode).toBe(200);
    await waitForState(s, id, 'Running', 90_000);
    await client.query(`INSERT INTO b VALUES (1001, 'after a was dropped')`);
    await untilEqual(() => mirror('gone', 'b'), await rowsOf(client, 'b'));
    await client.end();
  }, 180_000);

  it('a table dropped and made again while changes flow fails the pipe naming it (pgoutput does not send drops)', async () => {
    const { client, port } = await database('dropflow');
    await fillTable(client, 'a', 100);
    await fillTable(client, 'b', 100);
    const id = await createPipe(s, postgresPipeBody('dropflow', port, ['a', 'b']));
    await waitForState(s, id, 'Running', 90_000);
    // Made again under its name at once: another table, which the pipe's publication does not cover.
    await client.query('BEGIN');
    await client.query('DROP TABLE a');
    await client.query('CREATE TABLE a (id int PRIMARY KEY, v text NOT NULL)');
    await client.query('COMMIT');
    const failed = await waitForState(s, id, 'Failed', 30_000);
    expect(failed.reason).toContain('the source table public.a no longer exists as the pipe read it');
    expect(failed.lastErrorCode).toBe('SLUICE_ERR_SOURCE_TABLE_GONE');
    await client.end();
  }, 120_000);
});
