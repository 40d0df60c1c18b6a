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
    await store.transaction(async (repos) => {
      await repos.pipes.insert(pipe);
      await repos.pipes.recordTransition(pipe.id, {
        fromState: null,
        toState: 'Provisioning',
        reason: 'created',
        at: now,
      });
    });
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
