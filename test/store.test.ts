import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS, migrate, openStore, type Store } from '../src/store/index.js';
import { type RunningPostgres, startPostgres } from './support/postgres.js';

let postgres: RunningPostgres;
const dirs: string[] = [];

beforeAll(async () => {
  postgres = await startPostgres();
});
afterAll(async () => {
  await postgres?.stop();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** The same suite on both carriers of the one PostgreSQL dialect. */
const carriers: [string, () => Promise<Store>][] = [
  [
    'PGlite',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'sluice-store-'));
      dirs.push(dir);
      return openStore({ dataDir: dir });
    },
  ],
  [
    'PostgreSQL',
    async () =>
      openStore({ dataDir: '/nonexistent', databaseUrl: await postgres.createDatabase(`s${Date.now()}`) }),
  ],
];

describe.each(carriers)('metadata store on %s', (_name, open) => {
  let store: Store;
  beforeAll(async () => {
    store = await open();
  });
  afterAll(() => store.close());

  const organization = () => ({
    id: randomUUID(),
    name: `org-${randomUUID()}`,
    operator: false,
    createdAt: new Date(),
  });

  /** A stored organization with one service, for pipes rows. */
  const organizationWithService = async () => {
    const org = organization();
    await store.repos.identity.insertOrganization(org);
    const serviceId = randomUUID();
    await store.repos.identity.insertService({
      id: serviceId,
      organizationId: org.id,
      name: 's',
      kind: 'embedded',
      connection: {},
      createdAt: new Date(),
    });
    return { org, serviceId };
  };

  /** A team with a webhook `w-<suffix>` and an empty dashboard `d-<suffix>`, for alerts rows. */
  const teamWithDashboard = async () => {
    const org = organization();
    await store.repos.identity.insertOrganization(org);
    const teamId = randomUUID();
    await store.repos.identity.insertTeam({
      id: teamId,
      organizationId: org.id,
      name: 't',
      createdAt: new Date(),
    });
    const q = (sql: string, params: unknown[] = []) => store.db.query(sql, params);
    const suffix = randomUUID().slice(0, 8);
    await q(
      "insert into webhooks (id, team_id, name, url, created_at, updated_at) values ($1, $2, 'w', 'http://x', now(), now())",
      [`w-${suffix}`, teamId],
    );
    await q(
      "insert into dashboards (id, team_id, name, tags, tiles, created_at, updated_at) values ($1, $2, 'd', '[]', '[]', now(), now())",
      [`d-${suffix}`, teamId],
    );
    return { teamId, suffix, q };
  };

  it('applies every migration once, and again is a no-op', async () => {
    const rows = await store.db.query<{ version: number }>(
      'select version from sluice_migrations order by version',
    );
    expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
    expect(await migrate(store.db)).toEqual([]);
  });

  it('round-trips organizations, services and keys with millisecond timestamps', async () => {
    const org = organization();
    await store.repos.identity.insertOrganization(org);
    expect(await store.repos.identity.getOrganization(org.id)).toEqual(org);
    const service = {
      id: randomUUID(),
      organizationId: org.id,
      name: 'svc',
      kind: 'embedded' as const,
      connection: { a: 1 },
      createdAt: new Date(),
    };
    await store.repos.identity.insertService(service);
    expect(await store.repos.identity.getService(org.id, service.id)).toEqual(service);
    expect(await store.repos.identity.getService(randomUUID(), service.id)).toBeUndefined();
    const key = {
      id: `sk_${randomUUID()}`,
      organizationId: org.id,
      name: 'k',
      role: 'developer' as const,
      secretHash: 'h',
      createdAt: new Date(),
      revokedAt: null,
    };
    await store.repos.identity.insertApiKey(key);
    expect(await store.repos.identity.getApiKey(key.id)).toEqual(key);
    const revoked = await store.repos.identity.revokeApiKey(org.id, key.id, new Date());
    expect(revoked?.revokedAt).toBeInstanceOf(Date);
  });

  it('rolls a failed transaction back whole', async () => {
    const org = organization();
    await expect(
      store.transaction(async (repos) => {
        await repos.identity.insertOrganization(org);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await store.repos.identity.getOrganization(org.id)).toBeUndefined();
  });

  it('keeps pipes with JSON configuration, sealed secrets and their state history', async () => {
    const { org, serviceId } = await organizationWithService();
    const now = new Date();
    const pipe = {
      id: randomUUID(),
      organizationId: org.id,
      serviceId,
      name: 'p',
      sourceKind: 'kafka',
      state: 'Provisioning',
      stateReason: null,
      config: { source: { kafka: { topics: 't', nested: [1, { x: 'y' }] } } },
      secrets: 'v1:sealed',
      createdAt: now,
      updatedAt: now,
    };
    await store.transaction((repos) =>
      repos.pipes.insert(pipe, { fromState: null, toState: 'Provisioning', reason: 'created', at: now }),
    );
    expect(await store.repos.pipes.get(serviceId, pipe.id)).toEqual(pipe);
    await store.repos.pipes.update({
      ...pipe,
      state: 'Stopped',
      stateReason: 'stop',
      updatedAt: new Date(now.getTime() + 1),
    });
    expect((await store.repos.pipes.list(serviceId)).map((p) => p.state)).toEqual(['Stopped']);
    expect(await store.repos.pipes.transitions(pipe.id)).toEqual([
      { fromState: null, toState: 'Provisioning', reason: 'created', at: now },
    ]);
    await store.repos.pipes.delete(pipe.id);
    expect(await store.repos.pipes.get(serviceId, pipe.id)).toBeUndefined();
    expect(await store.repos.pipes.transitions(pipe.id)).toEqual([]);
  });

  it('creates concurrent pipes in shared statements, each with its own configuration, secrets and first transition', async () => {
    const { org, serviceId } = await organizationWithService();
    const at = new Date();
    const pipes = Array.from({ length: 12 }, (_, i) => ({
      id: randomUUID(),
      organizationId: org.id,
      serviceId,
      name: `p'${i}"`,
      sourceKind: i % 2 ? 'kafka' : 'objectStorage',
      state: 'Provisioning',
      stateReason: i % 3 ? null : `reason ${i}`,
      config: { source: { n: i, text: `a "quoted" {brace}, \\ and ,` }, list: [i, null] },
      secrets: i % 2 ? null : `v1:sealed-${i}`,
      createdAt: new Date(at.getTime() + i),
      updatedAt: new Date(at.getTime() + i),
    }));
    await Promise.all(
      pipes.map((pipe, i) =>
        store.pipeCreates.run({
          pipe,
          first: { fromState: null, toState: 'Provisioning', reason: `created ${i}`, at: pipe.createdAt },
        }),
      ),
    );
    expect(await store.repos.pipes.list(serviceId)).toEqual(pipes);
    for (const [i, pipe] of pipes.entries()) {
      expect(await store.repos.pipes.transitions(pipe.id)).toEqual([
        { fromState: null, toState: 'Provisioning', reason: `created ${i}`, at: pipe.createdAt },
      ]);
    }
  });

  it('serialises concurrent transactions without losing a write', async () => {
    const org = organization();
    await store.repos.identity.insertOrganization(org);
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.transaction(async (repos) => {
          await repos.identity.insertTeam({
            id: randomUUID(),
            organizationId: org.id,
            name: `team-${i}`,
            createdAt: new Date(),
          });
        }),
      ),
    );
    expect(await store.repos.identity.listTeams(org.id)).toHaveLength(20);
  });

  it("writes a tile's states, history and notifications in one statement each (issue 39)", async () => {
    const { teamId, suffix, q } = await teamWithDashboard();
    const ids = ['a', 'b', 'c'].map((x) => `${x}-${suffix}`);
    for (const id of ids)
      await q(
        `insert into alerts (id, team_id, threshold, interval, threshold_type, source, state, dashboard_id, tile_id,
           webhook_id, created_at, updated_at, last_notified_at)
         values ($1, $2, 1, '5m', 'above', 'tile', 'OK', $3, 'tile', $4, now(), now(), '2026-01-01T00:00:00Z')`,
        [id, teamId, `d-${suffix}`, `w-${suffix}`],
      );
    const [a, b, c] = ids as [string, string, string];
    const until = new Date('2026-11-22T10:00:00Z');
    const start = new Date('2026-11-22T09:55:00Z');
    const notified = new Date('2026-11-22T10:00:00.123Z');
    const present = await store.transaction((repos) =>
      repos.evaluation.setEvaluatedMany([
        { id: a, state: 'ALERT', until, notifiedAt: notified },
        { id: b, state: 'ALERT', until, notifiedAt: notified },
        { id: c, state: 'OK', until, notifiedAt: null },
        { id: `gone-${suffix}`, state: 'OK', until },
      ]),
    );
    expect([...present].sort()).toEqual([a, b, c]);
    const states = await q(
      `select id, state, evaluated_until as "until", last_notified_at as "notifiedAt" from alerts where id = any($1::text[]) order by id`,
      [ids],
    );
    expect(states).toEqual([
      { id: a, state: 'ALERT', until, notifiedAt: notified },
      { id: b, state: 'ALERT', until, notifiedAt: notified },
      // No notice now: when it was last notified stays as it was.
      { id: c, state: 'OK', until, notifiedAt: new Date('2026-01-01T00:00:00Z') },
    ]);

    const row = { windowStart: start, windowEnd: until, threshold: 1, createdAt: until };
    await store.repos.evaluation.addHistory([
      { ...row, alertId: a, groupKey: 'host-1', state: 'ALERT', value: 2.5, error: null },
      { ...row, alertId: a, groupKey: 'it\'s, "quoted"', state: 'OK', value: 0, error: null },
      { ...row, alertId: c, groupKey: null, state: 'OK', value: null, error: null },
    ]);
    const history = await store.repos.evaluation.history(a, 10, 0);
    expect(history.map((h) => [h.groupKey, h.state, h.value, h.attempts])).toEqual(
      expect.arrayContaining([
        ['host-1', 'ALERT', 2.5, 1],
        ['it\'s, "quoted"', 'OK', 0, 1],
      ]),
    );
    expect((await store.repos.evaluation.history(c, 10, 0))[0]).toMatchObject({
      groupKey: null,
      value: null,
    });

    // Failures: b's window fails for the first time, then again (one row, two attempts).
    const failure = {
      ...row,
      alertId: b,
      groupKey: null,
      state: null,
      value: null,
      error: 'boom',
      errorCode: 'X',
    };
    expect(await store.repos.evaluation.recordFailures([failure])).toHaveLength(1);
    expect(await store.repos.evaluation.recordFailures([{ ...failure, error: 'boom 2' }])).toEqual([]);
    expect(await store.repos.evaluation.history(b, 10, 0)).toMatchObject([{ error: 'boom 2', attempts: 2 }]);

    // Several alerts of one tile notifying in one tick: each gets its notice exactly once.
    const notice = (alertId: string, key: string) => ({
      alertId,
      teamId,
      webhookId: `w-${suffix}`,
      idempotencyKey: `${key}-${suffix}`,
      variables: { title: `${alertId} is firing`, body: 'a "quoted", {braced} \\ body', value: 2.5 },
    });
    await store.repos.outbox.add([notice(a, 'k1'), notice(b, 'k2'), notice(a, 'k1')], until);
    await store.repos.outbox.add([notice(b, 'k2')], until);
    const [forA, forB] = [await store.repos.outbox.forAlert(a), await store.repos.outbox.forAlert(b)];
    expect(forA.map((n) => n.variables)).toEqual([notice(a, 'k1').variables]);
    expect(forB.map((n) => n.idempotencyKey)).toEqual([`k2-${suffix}`]);
    expect(await store.repos.outbox.due(until, 1000)).toEqual(expect.arrayContaining([...forA, ...forB]));
  });

  it('a tick reads only the alerts with a window ended since they were evaluated', async () => {
    const { teamId, suffix, q } = await teamWithDashboard();
    const now = new Date('2026-11-22T10:04:30Z');
    // [name, interval, evaluated until]: due when a whole interval has passed since.
    const alerts: [string, string, string | null][] = [
      ['new', '5m', null],
      ['5m-due', '5m', '2026-11-22T09:55:00Z'],
      ['5m-not-yet', '5m', '2026-11-22T10:00:00Z'],
      ['1m-due', '1m', '2026-11-22T10:03:00Z'],
      ['1m-not-yet', '1m', '2026-11-22T10:04:00Z'],
      ['1h-not-yet', '1h', '2026-11-22T10:00:00Z'],
      ['1d-due', '1d', '2026-11-21T00:00:00Z'],
      ['12h-not-yet', '12h', '2026-11-22T00:00:00Z'],
    ];
    for (const [name, interval, until] of alerts)
      await q(
        `insert into alerts (id, team_id, threshold, interval, threshold_type, source, state, dashboard_id, tile_id,
           webhook_id, created_at, updated_at, evaluated_until)
         values ($1, $2, 1, $3, 'above', 'tile', 'OK', $4, 'tile', $5, now(), now(), $6)`,
        [`${name}-${suffix}`, teamId, interval, `d-${suffix}`, `w-${suffix}`, until],
      );
    const read = (await store.repos.evaluation.alertsToEvaluate(now))
      .map((alert) => alert.id)
      .filter((id) => id.endsWith(suffix))
      .map((id) => id.slice(0, -suffix.length - 1))
      .sort();
    expect(read).toEqual(['1d-due', '1m-due', '5m-due', 'new']);
  });

  it("reads an alert to evaluate with its columns' types: dates as Dates, numbers, json, nulls", async () => {
    const { teamId, suffix, q } = await teamWithDashboard();
    const created = new Date('2026-11-22T09:00:00.123Z');
    await q(
      `insert into alerts (id, team_id, name, message, threshold, threshold_max, interval, threshold_type, source, state,
         dashboard_id, tile_id, webhook_id, silenced, created_at, updated_at, evaluated_until, last_notified_at)
       values ($1, $2, 'n "q"', null, 1.5, 2.25, '5m', 'between', 'tile', 'ALERT', $3, 'tile', $4, $5, $6, $6, $7, null)`,
      [`typed-${suffix}`, teamId, `d-${suffix}`, `w-${suffix}`, { until: 'x', by: 'u' }, created, created],
    );
    const alert = (await store.repos.evaluation.alertsToEvaluate(new Date('2026-11-22T10:00:00Z'))).find(
      (a) => a.id === `typed-${suffix}`,
    );
    expect(alert).toMatchObject({
      teamId,
      name: 'n "q"',
      message: null,
      threshold: 1.5,
      thresholdMax: 2.25,
      interval: '5m',
      thresholdType: 'between',
      state: 'ALERT',
      silenced: { until: 'x', by: 'u' },
      createdAt: created,
      updatedAt: created,
      evaluatedUntil: created,
      lastNotifiedAt: null,
    });
    expect(alert?.createdAt).toBeInstanceOf(Date);
    expect(typeof alert?.organizationId).toBe('string');
  });

  it("writes an updated alert's history rows as given, whatever their text holds (COPY on PGlite)", async () => {
    const { teamId, suffix, q } = await teamWithDashboard();
    for (const name of ['copied', 'inserted'])
      await q(
        `insert into alerts (id, team_id, threshold, interval, threshold_type, source, state, dashboard_id, tile_id,
           webhook_id, created_at, updated_at) values ($1, $2, 1, '5m', 'above', 'tile', 'OK', $3, 'tile', $4, now(), now())`,
        [`${name}-${suffix}`, teamId, `d-${suffix}`, `w-${suffix}`],
      );
    const windowStart = new Date('2026-11-22T09:55:00Z');
    const rows = (alertId: string) =>
      ['tab\there', 'line\nbreak\r', 'back\\slash \\N', '\\N', '', null, 'é 😀', 'nul\u0000byte'].map(
        (groupKey, i) => ({
          alertId,
          windowStart,
          windowEnd: new Date('2026-11-22T10:00:00Z'),
          groupKey,
          state: i % 2 ? 'ALERT' : 'OK',
          value: [0.1, -3, 1e300, null, 5e-324, 42, 7, 8][i] as number | null,
          threshold: 0.30000000000000004,
          error: i === 3 ? 'an\terror\u0000' : null,
          errorCode: i === 3 ? 'SLUICE_ERR_INTERNAL' : null,
          createdAt: new Date('2026-11-22T10:00:30.5Z'),
        }),
      );
    await store.transaction((repos) => repos.evaluation.addHistoryOfUpdated(rows(`copied-${suffix}`)));
    await store.repos.evaluation.addHistory(rows(`inserted-${suffix}`));
    const read = async (alertId: string) =>
      (await store.repos.evaluation.history(alertId, 100, 0)).map(({ alertId: _, ...row }) => row);
    const copied = await read(`copied-${suffix}`);
    expect(copied).toHaveLength(8);
    // The same rows as the arrays' insert writes; in the order given (newest id first in a window).
    const byGroup = (list: typeof copied) =>
      [...list].sort((a, b) => `${a.groupKey}`.localeCompare(`${b.groupKey}`));
    expect(byGroup(copied)).toEqual(byGroup(await read(`inserted-${suffix}`)));
    expect(copied.map((row) => row.value)).toEqual(
      rows('')
        .map((row) => row.value)
        .reverse(),
    );
    expect(copied.find((row) => row.groupKey === null)?.value).toBe(42);
    expect(copied.find((row) => row.groupKey === '\\N')).toMatchObject({
      value: null,
      error: 'an\terror\uFFFD',
    });
    // PostgreSQL's text holds no NUL: a tenant's group value with one would fail every team's write.
    expect(copied.find((row) => row.value === 8)?.groupKey).toBe('nul\uFFFDbyte');
  });

  it("prunes alert history older than 30 days' cutoff along its ids, never a row written since", async () => {
    const { q } = await teamWithDashboard();
    // Run last in this store: the prune reads the whole table's order of ids.
    await q('delete from alert_history');
    const write = (name: string, createdAt: string) =>
      q(
        `insert into alert_history (alert_id, window_start, window_end, state, value, threshold, created_at)
         values ($1, $2, $2, 'OK', 1, 1, $2)`,
        [name, new Date(createdAt)],
      );
    await write('old-1', '2026-10-01T00:00:00Z');
    await write('old-2', '2026-10-02T00:00:00Z');
    await write('recent-1', '2026-11-20T00:00:00Z');
    await write('old-after-recent', '2026-10-03T00:00:00Z'); // written after a recent row (a retried failure's)
    await write('recent-2', '2026-11-26T00:00:00Z');
    const left = async () =>
      (await q('select alert_id from alert_history order by id')).map((row) => row.alert_id);

    await store.repos.evaluation.pruneHistory(new Date('2026-10-25T00:00:00Z'));
    // Nothing written since the cutoff goes; an old row behind a recent one waits for it.
    expect(await left()).toEqual(['recent-1', 'old-after-recent', 'recent-2']);
    await store.repos.evaluation.pruneHistory(new Date('2026-11-25T00:00:00Z'));
    expect(await left()).toEqual(['recent-2']);
    await store.repos.evaluation.pruneHistory(new Date('2027-01-01T00:00:00Z'));
    expect(await left()).toEqual([]);
  });
});

describe('metadata store on PostgreSQL, when the server drops a connection', () => {
  it('reports the idle connection that failed, and the next query reconnects', async () => {
    const failures: Error[] = [];
    const store = await openStore({
      dataDir: '/nonexistent',
      databaseUrl: await postgres.createDatabase(`drop${Date.now()}`),
      onConnectionError: (error) => failures.push(error),
    });
    try {
      const [{ pid }] = (await store.db.query<{ pid: number }>('select pg_backend_pid() as pid')) as [
        { pid: number },
      ];
      // Another session ends the pool's idle connection, as a server restart or a proxy would.
      const other = await openStore({
        dataDir: '/nonexistent',
        databaseUrl: await postgres.createDatabase(`k${Date.now()}`),
      });
      try {
        await other.db.query('select pg_terminate_backend($1)', [pid]);
      } finally {
        await other.close();
      }
      for (let i = 0; failures.length === 0 && i < 100; i++)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(failures[0]?.message).toMatch(/terminat/i);
      expect(await store.db.query('select 1 as one')).toEqual([{ one: 1 }]);
    } finally {
      await store.close();
    }
  });
});
