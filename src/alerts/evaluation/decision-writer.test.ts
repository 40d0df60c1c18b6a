import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../store/index.js';
import { type Decision, DecisionWriter } from './decision-writer.js';

describe('a tick writes its decisions in as few transactions as it can (real PGlite store)', () => {
  let dir: string;
  let store: Store;
  const transactions: string[][] = [];
  const forgotten: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-writer-'));
    store = await openStore({ dataDir: dir });
    await store.db.exec(`
      insert into organizations values ('00000000-0000-0000-0000-00000000000a', 'o', false, now());
      insert into teams values ('00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-00000000000a', 't', now());
      insert into webhooks (id, team_id, name, url, created_at, updated_at)
        values ('w', '00000000-0000-0000-0000-0000000000a1', 'w', 'http://x', now(), now());
      insert into dashboards (id, team_id, name, tags, tiles, created_at, updated_at)
        values ('d', '00000000-0000-0000-0000-0000000000a1', 'd', '[]', '[]', now(), now());
      insert into alerts (id, team_id, threshold, interval, threshold_type, source, state, dashboard_id, tile_id, webhook_id, created_at, updated_at)
        select 'a' || n, '00000000-0000-0000-0000-0000000000a1', 1, '5m', 'above', 'tile', 'OK', 'd', 't', 'w', now(), now()
          from generate_series(1, 6) n;
    `);
  });
  afterAll(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const decided = (alertId: string): Decision => ({
    alertId,
    state: 'ALERT',
    until: new Date('2026-11-28T10:05:00Z'),
    history: [
      {
        alertId,
        windowStart: new Date('2026-11-28T10:00:00Z'),
        windowEnd: new Date('2026-11-28T10:05:00Z'),
        groupKey: null,
        state: 'ALERT',
        value: 2,
        threshold: 1,
        error: null,
        createdAt: new Date(),
      },
    ],
    notices: [],
    notifiedAt: new Date('2026-11-28T10:05:00Z'),
  });

  it('decisions made while a write runs share the next transaction, and all are written', async () => {
    const counted = {
      transaction: <T>(work: Parameters<Store['transaction']>[0]) =>
        store.transaction(async (repos) => {
          transactions.push([]);
          const recording = {
            ...repos,
            evaluation: Object.assign(Object.create(repos.evaluation), {
              setEvaluatedMany: (rows: { id: string }[]) => {
                transactions.at(-1)?.push(...rows.map((r) => r.id));
                return repos.evaluation.setEvaluatedMany(rows as never);
              },
            }),
          };
          return work(recording) as Promise<T>;
        }),
    } as unknown as Store;
    const writer = new DecisionWriter(
      { store: counted, alerts: { forget: (ids) => forgotten.push(...ids) } },
      new Date(),
    );
    // Six tiles decided one after another, as the evaluator's lanes finish their queries.
    for (const id of ['a1', 'a2', 'a3', 'a4', 'a5', 'a6']) writer.add([decided(id)]);
    await writer.done();
    expect(transactions).toEqual([['a1'], ['a2', 'a3', 'a4', 'a5', 'a6']]);
    expect(forgotten.sort()).toEqual(['a1', 'a2', 'a3', 'a4', 'a5', 'a6']);
    const states = await store.db.query<{ state: string; n: number }>(
      `select a.state, count(h.id)::int as n from alerts a join alert_history h on h.alert_id = a.id group by a.state`,
    );
    expect(states).toEqual([{ state: 'ALERT', n: 6 }]);
  });

  it('a failed write fails the tick: done() throws what it failed with', async () => {
    const failing = {
      transaction: () => Promise.reject(new Error('the store went away')),
    } as unknown as Store;
    const writer = new DecisionWriter({ store: failing, alerts: { forget: () => undefined } }, new Date());
    writer.add([decided('a1')]);
    writer.add([decided('a2')]);
    await expect(writer.done()).rejects.toThrow('the store went away');
  });
});
