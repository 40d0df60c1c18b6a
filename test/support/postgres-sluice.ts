import { afterAll, beforeAll } from 'vitest';
import { POSTGRES_MAJORS, type PostgresMajor, type RunningPostgres, startPostgres } from './postgres.js';
import { startSluice, type TestSluice } from './sluice.js';

/** A real PostgreSQL server and a Sluice that runs pipes, as the PostgreSQL pipe tests share them. */
export interface PostgresAndSluice {
  server: RunningPostgres;
  s: TestSluice;
}

/**
 * Starts a PostgreSQL server of `major` and a Sluice run as a user runs it (runtime on) before the
 * tests of the enclosing describe (of the file, when called at its top level), hands both to
 * `ready` (which may also prepare databases, roles and clients), and stops both after those tests:
 * Sluice first, so its pipes leave the server before it stops. vitest runs afterAll hooks in the
 * reverse of their order, so a file's own afterAll, added after this call, runs before it (its
 * clients end while the server is still up).
 */
export function usePostgresAndSluice(
  ready: (started: PostgresAndSluice) => unknown,
  major: PostgresMajor = POSTGRES_MAJORS[0],
  timeoutMs = 120_000,
): void {
  let started: Partial<PostgresAndSluice> = {};
  beforeAll(async () => {
    started = {};
    const server = await startPostgres(major);
    started.server = server;
    const s = await startSluice({ runtime: true });
    started.s = s;
    await ready({ server, s });
  }, timeoutMs);
  afterAll(async () => {
    await started.s?.close();
    await started.server?.stop();
  });
}
