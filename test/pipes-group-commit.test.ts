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

  /**
   * Runs `work` with the store's transactions counted, and the statements run in them: how many
   * of each (the store's own transaction is back after).
   */
  async function transactionsOf(
    work: () => Promise<void>,
  ): Promise<{ transactions: number; statements: number }> {
    const store = s.sluice.store;
    const counted = { transactions: 0, statements: 0 };
    const transaction = store.db.transaction.bind(store.db);
    store.db.transaction = (inner) => {
      counted.transactions += 1;
      return transaction((tx) =>
        inner({
          ...tx,
          query: (sql, params) => {
            counted.statements += 1;
            return tx.query(sql, params);
          },
        }),
      );
    };
    try {
      await work();
    } finally {
      store.db.transaction = transaction;
    }
    return counted;
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

  const row = (name: string): PipeRow => ({
    id: randomUUID(),
    organizationId: s.organizationId,
    serviceId: s.serviceId,
    name,
    sourceKind: 'objectStorage',
    state: 'Provisioning',
    stateReason: 'test',
    config: { name },
    secrets: null,
    createdAt: new Date(),
    updatedAt: new Date(),
  });
  const created = () => ({ fromState: null, toState: 'Provisioning', reason: 'created', at: new Date() });

  it('a create that fails inside a shared group fails alone: the others commit, nothing of it is stored', async () => {
    const store = s.sluice.store;
    const existing = row('conflict target');
    await store.transaction((repos) => repos.pipes.insert(existing, created()));
    const good = Array.from({ length: 6 }, (_, i) => row(`good ${i}`));
    const counted = await transactionsOf(async () => {
      const writes = good.map((pipe) => store.pipeCreates.run({ pipe, first: created() }));
      // Conflicts with a stored pipe's primary key.
      const bad = store.pipeCreates.run({ pipe: { ...existing, name: 'duplicate id' }, first: created() });
      const outcomes = await Promise.allSettled([...writes, bad]);
      expect(outcomes.slice(0, 6).map((o) => o.status)).toEqual(Array(6).fill('fulfilled'));
      expect(outcomes[6]?.status).toBe('rejected');
      expect(String((outcomes[6] as PromiseRejectedResult).reason)).toMatch(/duplicate key/);
    });
    for (const pipe of good) {
      expect((await store.repos.pipes.getById(pipe.id))?.name).toBe(pipe.name);
      expect((await store.repos.pipes.transitions(pipe.id)).map((t) => t.reason)).toEqual(['created']);
    }
    expect((await store.repos.pipes.getById(existing.id))?.name).toBe('conflict target');
    expect(await store.repos.pipes.transitions(existing.id)).toHaveLength(1);
    // All seven together (asked for in one turn of the event loop), rolled back, then one each.
    expect(counted.transactions).toBe(1 + 7);
  });

  it('concurrent creates share a transaction and its statements, each pipe with its own row and first transition', async () => {
    const store = s.sluice.store;
    const pipes = Array.from({ length: 10 }, (_, i) => row(`shared ${i}`));
    const counted = await transactionsOf(async () => {
      await Promise.all(pipes.map((pipe) => store.pipeCreates.run({ pipe, first: created() })));
    });
    // Asked for in one turn of the event loop: one transaction, one statement for the pipes and
    // one for their transitions.
    expect(counted).toEqual({ transactions: 1, statements: 2 });
    for (const pipe of pipes) {
      const stored = await store.repos.pipes.getById(pipe.id);
      expect([stored?.name, stored?.config]).toEqual([pipe.name, { name: pipe.name }]);
      const transitions = await store.repos.pipes.transitions(pipe.id);
      expect(transitions.map((t) => [t.fromState, t.toState, t.reason])).toEqual([
        [null, 'Provisioning', 'created'],
      ]);
    }
  });

  it('creates asked for over consecutive turns of the event loop share a group', async () => {
    const store = s.sluice.store;
    // A group also closes 2 ms after its first create (MAX_WAIT_MS): on a loaded machine the next
    // turn can come later than that, so the case is tried up to five times, and one group of the
    // two turns must be seen (a flush after one turn makes two groups every time).
    const tries: { transactions: number; statements: number }[] = [];
    for (let attempt = 0; attempt < 5 && tries.at(-1)?.transactions !== 1; attempt += 1) {
      const pipes = Array.from({ length: 10 }, (_, i) => row(`turns ${attempt} ${i}`));
      tries.push(
        await transactionsOf(async () => {
          const first = pipes.slice(0, 5).map((pipe) => store.pipeCreates.run({ pipe, first: created() }));
          // As the other half of concurrent clients: their requests are read in the next turn.
          const second = await new Promise<Promise<void>[]>((resolve) =>
            setImmediate(() =>
              resolve(pipes.slice(5).map((pipe) => store.pipeCreates.run({ pipe, first: created() }))),
            ),
          );
          await Promise.all([...first, ...second]);
        }),
      );
      for (const pipe of pipes) expect((await store.repos.pipes.getById(pipe.id))?.name).toBe(pipe.name);
    }
    expect(tries.at(-1), JSON.stringify(tries)).toEqual({ transactions: 1, statements: 2 });
  });
});
