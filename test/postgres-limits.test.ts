import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  fillTable,
  openDatabase,
  POSTGRES_MAJORS,
  postgresPipeBody,
  type RunningPostgres,
} from './support/postgres.js';
import { usePostgresAndSluice } from './support/postgres-sluice.js';
import { createPipe, sql, statusOf } from './support/runtime.js';
import type { TestSluice } from './support/sluice.js';
import { waitFor } from './support/wait.js';

// The server's connection and slot limits against a postgres pipe, on a real PostgreSQL server and
// a Sluice run as a user runs it: a pipe that could never get the sessions or the slot it needs is
// refused at create, naming the setting; a snapshot the server refuses sessions to while it runs
// (its other clients hold them) reads on the sessions it has.

let server: RunningPostgres;
let s: TestSluice;

/** A role that logs in with at most `limit` sessions and reads every table of the database. */
async function cappedRole(client: pg.Client, role: string, limit: number): Promise<void> {
  await client.query(`CREATE ROLE ${role} LOGIN PASSWORD '${role}' CONNECTION LIMIT ${limit}`);
  await client.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${role}`);
}

function snapshotPipe(database: string, port: number, role: string, settings: Record<string, unknown>) {
  const body = postgresPipeBody(database, port, ['t'], {
    replicationMode: 'snapshot',
    snapshotNumRowsPerPartition: 1000,
    ...settings,
  });
  return {
    ...body,
    source: { postgres: { ...body.source.postgres, credentials: { username: role, password: role } } },
  };
}

/** Waits for a snapshot pipe to end; the states it went through on the way. */
async function statesUntilDone(id: string): Promise<string[]> {
  const seen = new Set<string>();
  let last: unknown;
  await waitFor(
    `pipe ${id} to complete`,
    async () => {
      const status = await statusOf(s, id);
      last = status;
      seen.add(status.state);
      return status.state === 'Completed' || status.state === 'Failed';
    },
    90_000,
  ).catch((error: Error) => {
    // What the pipe was doing when the wait ran out: its states, its last status and its log.
    const log = s.logs.filter((line) => line.includes(id)).slice(-40);
    throw new Error(
      `${error.message}; states ${[...seen].join(', ')}; last status ${JSON.stringify(last)}\n${log.join('\n')}`,
    );
  });
  return [...seen];
}

async function pipesNamed(name: string): Promise<unknown[]> {
  const listed = await s.request({ method: 'GET', url: s.pipesUrl });
  return listed.json.result.filter((p: { name: string }) => p.name === name);
}

describe.each(POSTGRES_MAJORS)('postgres pipes and the server limits on PostgreSQL %i', (major) => {
  usePostgresAndSluice((started) => ({ server, s } = started), major);

  it('refuses a pipe the server never gives the sessions to run, or a slot; a narrower snapshot than asked runs', async () => {
    const { client, port } = await openDatabase(server, 'narrow');
    await fillTable(client, 't', 5_000);
    await cappedRole(client, 'narrow', 2);

    const refused = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: snapshotPipe('narrow', port, 'narrow', { initialLoadParallelism: 3 }),
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json.error).toContain('source.postgres.credentials');
    expect(refused.json.error).toContain(
      "at least 3 sessions (its own 2 and one to read the snapshot on), and the user's CONNECTION LIMIT is 2",
    );
    expect(refused.json.code).toBe('SLUICE_ERR_VALIDATION');
    expect(await pipesNamed('pg narrow')).toEqual([]);

    // Four sessions: the pipe's own two and two ranges at once of the three asked for.
    await client.query('ALTER ROLE narrow CONNECTION LIMIT 4');
    const id = await createPipe(s, snapshotPipe('narrow', port, 'narrow', { initialLoadParallelism: 3 }));
    expect(await statesUntilDone(id)).not.toContain('Degraded');
    expect((await statusOf(s, id)).state).toBe('Completed');
    const [copied] = await sql(s, 'SELECT count() AS n FROM mirror_narrow.t');
    expect(Number(copied?.n)).toBe(5_000);

    // Every slot taken (physical slots count against max_replication_slots too).
    const free = await client.query<{ n: number }>(
      `SELECT current_setting('max_replication_slots')::int - (SELECT count(*) FROM pg_replication_slots)::int AS n`,
    );
    const fill = free.rows[0]?.n ?? 0;
    expect(fill).toBeGreaterThan(0);
    await client.query(
      `SELECT pg_create_physical_replication_slot('filler_' || i) FROM generate_series(1, ${fill}) i`,
    );
    try {
      const body = postgresPipeBody(
        'narrow',
        port,
        ['t'],
        {},
        { name: 'pg slotless', destination: 'slotless' },
      );
      const slotless = await s.request({ method: 'POST', url: s.pipesUrl, body });
      expect(slotless.statusCode).toBe(400);
      expect(slotless.json.error).toContain('source.postgres.host');
      expect(slotless.json.error).toContain('no free replication slot');
      expect(slotless.json.code).toBe('SLUICE_ERR_VALIDATION');
      expect(await pipesNamed('pg slotless')).toEqual([]);
      const publications = await client.query('SELECT pubname FROM pg_publication');
      expect(publications.rows).toEqual([]);
    } finally {
      await client.query(
        `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE 'filler\\_%'`,
      );
    }
    await client.end();
  }, 120_000);

  it('a snapshot the server refuses sessions to while it runs reads on the sessions it has', async () => {
    const { client, port } = await openDatabase(server, 'crowded');
    await fillTable(client, 't', 30_000);
    // Five sessions for the role, two of them held by another client of the server: the pipe's own
    // two leave one of the four ranges it asks for at once (asked for together, the server may
    // refuse them all at first).
    await cappedRole(client, 'crowded', 5);
    const held: pg.Client[] = [];
    for (let i = 0; i < 2; i++) {
      const other = new pg.Client({
        host: '127.0.0.1',
        port,
        database: 'crowded',
        user: 'crowded',
        password: 'crowded',
      });
      await other.connect();
      held.push(other);
    }
    try {
      const id = await createPipe(s, snapshotPipe('crowded', port, 'crowded', { initialLoadParallelism: 4 }));
      expect(await statesUntilDone(id)).not.toContain('Degraded');
      expect((await statusOf(s, id)).state).toBe('Completed');
      const [copied] = await sql(s, 'SELECT count() AS n, uniqExact(id) AS ids FROM mirror_crowded.t');
      expect({ n: Number(copied?.n), ids: Number(copied?.ids) }).toEqual({ n: 30_000, ids: 30_000 });
      // The server did refuse a session, and the snapshot said so.
      expect(s.logs.some((line) => line.includes('the snapshot goes on with the sessions it has'))).toBe(
        true,
      );
    } finally {
      await Promise.all(held.map((other) => other.end()));
    }
    await client.end();
  }, 120_000);
});
