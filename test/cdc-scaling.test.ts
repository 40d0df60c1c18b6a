import type pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { fillTable, openDatabase, postgresPipeBody, type RunningPostgres } from './support/postgres.js';
import { usePostgresAndSluice } from './support/postgres-sluice.js';
import { createPipe, sql, waitForState } from './support/runtime.js';
import type { TestSluice } from './support/sluice.js';

// What pipesCdcScaling does in Sluice: the cores it gives a service's database pipes bound the
// batches those pipes have in flight, all of them together.

let s: TestSluice;
let postgres: RunningPostgres;
const clients: pg.Client[] = [];

usePostgresAndSluice((started) => ({ server: postgres, s } = started), undefined, 300_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.end()));
});

/**
 * The most batches the pipes had claimed and not committed at once, sampled while `until` is not
 * done (each sample reads the store, where a batch is recorded before it is read).
 */
async function mostInFlight(pipeIds: string[], until: Promise<unknown>): Promise<number> {
  let done = false;
  void until.finally(() => {
    done = true;
  });
  let most = 0;
  while (!done) {
    const open = await Promise.all(pipeIds.map((id) => s.sluice.store.repos.progress.openBatches(id)));
    most = Math.max(most, open.flat().length);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await until;
  return most;
}

/** A database `name` of 20,000 orders and a snapshot pipe of it asking for four ranges at once: its id. */
async function snapshotPipe(name: string): Promise<string> {
  const { client, port } = await openDatabase(postgres, name);
  clients.push(client);
  await fillTable(client, 'orders', 20_000);
  const settings = {
    initialLoadParallelism: 4,
    snapshotNumRowsPerPartition: 1000,
    replicationMode: 'snapshot',
  };
  return createPipe(s, postgresPipeBody(name, port, ['orders'], settings));
}

describe('pipesCdcScaling', () => {
  it("bounds the batches of the service's PostgreSQL pipes in flight together: one per core", async () => {
    const scaling = `/v1/organizations/${s.organizationId}/services/${s.serviceId}/pipesCdcScaling`;
    const patched = await s.request({
      method: 'PATCH',
      url: scaling,
      body: { replicaCpuMillicores: 1000, replicaMemoryGb: 4 },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    // Two pipes, each asking for four snapshot ranges at once, on one core.
    const ids: string[] = [];
    for (const name of ['north', 'south']) ids.push(await snapshotPipe(name));
    const completed = Promise.all(ids.map((id) => waitForState(s, id, 'Completed', 120_000)));
    expect(await mostInFlight(ids, completed)).toBe(1);
    for (const name of ['north', 'south']) {
      const [row] = await sql(s, `SELECT count() AS n FROM mirror_${name}.orders FINAL`);
      expect(Number(row?.n)).toBe(20_000);
    }
    // More cores, more at once: the limit is the scaling's, not a fixed one.
    const more = await s.request({
      method: 'PATCH',
      url: scaling,
      body: { replicaCpuMillicores: 4000, replicaMemoryGb: 16 },
    });
    expect(more.statusCode).toBe(200);
    const east = await snapshotPipe('east');
    const most = await mostInFlight([east], waitForState(s, east, 'Completed', 120_000));
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(4);
  });
});
