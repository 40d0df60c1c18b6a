import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PipeRow } from '../src/store/index.js';
import { objectStoragePipe } from './support/pipes.js';
import { startSluice, type TestSluice } from './support/sluice.js';

/** Concurrent creates share one store transaction (src/store/group-commit.ts); each keeps its own outcome. */
describe('group commit of pipe creates', () => {
  let s: TestSluice;
  beforeAll(async () => {
    s = await startSluice({ runtime: false });
  });
  afterAll(async () => {
    await s.close();
  });

  /** Runs `work` with the store's transactions counted: how many began (the store's own is back after). */
  async function transactionsOf(work: () => Promise<void>): Promise<number> {
    const store = s.sluice.store;
    let transactions = 0;
    const transaction = store.db.transaction.bind(store.db);
    store.db.transaction = (inner) => {
      transactions += 1;
      return transaction(inner);
    };
    try {
      await work();
    } finally {
      store.db.transaction = transaction;
    }
    return transactions;
  }

  it('concurrent creates with one invalid among them: the others are created, the bad one is a 400 and nothing of it is stored', async () => {
    const names = Array.from({ length: 8 }, (_, i) => `grouped ${i}`);
    const bodies: unknown[] = names.map((name) => objectStoragePipe({ name }));
    bodies[3] = objectStoragePipe({ name: 'grouped bad', scaling: { replicas: 0 } });
    const responses = await Promise.all(
      bodies.map((body) => s.request({ method: 'POST', url: s.pipesUrl, body })),
    );
    expect(responses.map((r) => r.statusCode)).toEqual([200, 200, 200, 400, 200, 200, 200, 200]);
    expect(responses[3]?.json.code).toBe('SLUICE_ERR_VALIDATION');
    const listed = (await s.request({ method: 'GET', url: s.pipesUrl })).json.result as { name: string }[];
    const stored = listed.map((pipe) => pipe.name).filter((name) => name.startsWith('grouped'));
    expect(stored.sort()).toEqual(names.filter((_, i) => i !== 3).sort());
    // Every created pipe has exactly its one first transition.
    for (const response of responses.filter((r) => r.statusCode === 200)) {
      const id = response.json.result.id as string;
      const transitions = await s.sluice.store.repos.pipes.transitions(id);
      expect(transitions.map((t) => [t.fromState, t.toState, t.reason])).toEqual([
        [null, 'Provisioning', 'created'],
      ]);
    }
  });

  it('a write that fails inside a shared transaction fails alone: the others commit, nothing of it is stored', async () => {
    const store = s.sluice.store;
    const row = (name: string): PipeRow => ({
      id: randomUUID(),
      organizationId: s.organizationId,
      serviceId: s.serviceId,
      name,
      sourceKind: 'objectStorage',
      state: 'Provisioning',
      stateReason: 'test',
      config: {},
      secrets: null,
      createdAt: new Date(),
      updatedAt: new Date(),
    });
    const created = () => ({ fromState: null, toState: 'Provisioning', reason: 'created', at: new Date() });
    const existing = row('conflict target');
    await store.transaction((repos) => repos.pipes.insert(existing, created()));
    const transactions = await transactionsOf(async () => {
      const good = Array.from({ length: 6 }, (_, i) => row(`good ${i}`));
      const half = row('half written');
      const writes = good.map((pipe) =>
        store.groupedTransaction((repos) => repos.pipes.insert(pipe, created())),
      );
      // Its first insert succeeds, its second conflicts with a stored pipe's primary key.
      const bad = store.groupedTransaction(async (repos) => {
        await repos.pipes.insert(half, created());
        await repos.pipes.insert({ ...existing, name: 'duplicate id' }, created());
      });
      const outcomes = await Promise.allSettled([...writes, bad]);
      expect(outcomes.slice(0, 6).map((o) => o.status)).toEqual(Array(6).fill('fulfilled'));
      expect(outcomes[6]?.status).toBe('rejected');
      expect(String((outcomes[6] as PromiseRejectedResult).reason)).toMatch(/duplicate key/);
      for (const pipe of good) expect((await store.repos.pipes.getById(pipe.id))?.name).toBe(pipe.name);
      expect(await store.repos.pipes.getById(half.id)).toBeUndefined();
      expect((await store.repos.pipes.getById(existing.id))?.name).toBe('conflict target');
    });
    // The first write alone, the other six with the bad one together, rolled back, then one each.
    expect(transactions).toBe(1 + 1 + 6);
  });

  it('concurrent writes share transactions', async () => {
    const store = s.sluice.store;
    const transactions = await transactionsOf(async () => {
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => store.groupedTransaction(async () => i)),
      );
      expect(results).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });
    expect(transactions).toBe(2);
  });
});
