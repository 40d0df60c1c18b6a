import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AZURITE_KEY } from './support/azurite.js';
import {
  ALL_SECRETS,
  azurePipe,
  kafkaPipe,
  kinesisPipe,
  objectStoragePipe,
  postgresPipe,
  sourcesForSampleBodies,
} from './support/pipes.js';
import { type RunningPostgres, startPostgres } from './support/postgres.js';
import { startSluice } from './support/sluice.js';

const run = promisify(execFile);
const MASTER_KEY = 'a'.repeat(64);

/** grep -r over a directory: the files in which the text occurs, byte for byte. */
async function filesContaining(dir: string, text: string): Promise<string[]> {
  try {
    const { stdout } = await run('grep', ['-rlaF', '-e', text, '--', dir]);
    return stdout.split('\n').filter(Boolean);
  } catch (error) {
    if ((error as { code?: number }).code === 1) return [];
    throw error;
  }
}

/** Pipes as listed, without what the running runtime moves on its own (state and its time). */
function stable(pipes: Record<string, unknown>[]) {
  return pipes.map(({ state: _state, updatedAt: _updatedAt, ...rest }) => rest);
}

describe('durability on PGlite', () => {
  it('50 concurrent creates are all stored, with distinct ids', async () => {
    const s = await startSluice();
    try {
      const responses = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          s.request({ method: 'POST', url: s.pipesUrl, body: objectStoragePipe({ name: `pipe ${i}` }) }),
        ),
      );
      expect(responses.map((r) => r.statusCode)).toEqual(Array(50).fill(200));
      const ids = new Set(responses.map((r) => r.json.result.id));
      expect(ids.size).toBe(50);
      const list = await s.request({ method: 'GET', url: s.pipesUrl });
      expect(new Set(list.json.result.map((p: any) => p.id))).toEqual(ids);
    } finally {
      await s.close();
    }
  });

  it('a restart on the same data directory keeps everything, and no secret is readable on disk or in the logs', async () => {
    // The control plane alone: the sample bodies (one of every kind, each with its secrets) name
    // sources that do not all exist, which a running Sluice's create checks would refuse.
    const first = await startSluice({ runtime: false });
    const dataDir = first.dataDir;
    // Create checks run against real sources (test/support/pipes.ts).
    const azurite = await sourcesForSampleBodies(first);
    try {
      const bodies = [
        objectStoragePipe(),
        azurePipe(azurite.connectionString),
        kafkaPipe(),
        kinesisPipe(),
        postgresPipe(),
      ];
      const created = [];
      for (const body of bodies) {
        const response = await first.request({ method: 'POST', url: first.pipesUrl, body });
        expect(response.statusCode, response.body).toBe(200);
        created.push(response.json.result);
      }
      await first.request({
        method: 'PATCH',
        url: `${first.pipesUrl}/${created[0].id}/state`,
        body: { command: 'stop' },
      });
      const key = await first.request({
        method: 'POST',
        url: `/v1/organizations/${first.organizationId}/keys`,
        body: { name: 'kept', role: 'developer' },
      });
      const before = (await first.request({ method: 'GET', url: first.pipesUrl })).json.result;
      const logs = first.logs.join('');
      await first.close({ keepData: true });

      const second = await startSluice({ dataDir, runtime: false });
      try {
        expect(second.organizationId).toBe(first.organizationId);
        expect(second.serviceId).toBe(first.serviceId);
        const after = (await second.request({ method: 'GET', url: second.pipesUrl })).json.result;
        expect(stable(after)).toEqual(stable(before));
        expect(after[0].state).toBe('Stopped');
        const keys = (
          await second.request({ method: 'GET', url: `/v1/organizations/${second.organizationId}/keys` })
        ).json.result;
        expect(keys.map((k: any) => k.id)).toContain(key.json.result.id);
        // The sealed secrets still open after the restart: a PATCH re-validates the whole config.
        const patched = await second.request({
          method: 'PATCH',
          url: `${second.pipesUrl}/${created[2].id}`,
          body: { name: 'renamed' },
        });
        expect(patched.statusCode).toBe(200);
        await second.close({ keepData: true });
        for (const secret of [...ALL_SECRETS, AZURITE_KEY, key.json.result.secret]) {
          expect(await filesContaining(dataDir, secret), secret).toEqual([]);
          expect(logs.includes(secret), secret).toBe(false);
          expect(second.logs.join('').includes(secret), secret).toBe(false);
        }
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    } finally {
      await azurite.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses a second process on a data directory in use', async () => {
    const s = await startSluice();
    try {
      await expect(startSluice({ dataDir: s.dataDir })).rejects.toMatchObject({
        code: 'SLUICE_ERR_DATA_DIR_BUSY',
      });
    } finally {
      await s.close();
    }
  });
});

describe('durability on PostgreSQL', () => {
  let postgres: RunningPostgres;
  beforeAll(async () => {
    postgres = await startPostgres();
  });
  afterAll(() => postgres?.stop());

  it('50 concurrent creates and a restart keep everything', async () => {
    const databaseUrl = await postgres.createDatabase('durability');
    const first = await startSluice({ databaseUrl, env: { SLUICE_MASTER_KEY: MASTER_KEY } });
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        first.request({ method: 'POST', url: first.pipesUrl, body: objectStoragePipe({ name: `pg ${i}` }) }),
      ),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(Array(50).fill(200));
    expect(new Set(responses.map((r) => r.json.result.id)).size).toBe(50);
    const before = (await first.request({ method: 'GET', url: first.pipesUrl })).json.result;
    await first.close();
    // Another node (its own data directory, no shared key) must not start on the shared store.
    await expect(startSluice({ databaseUrl })).rejects.toMatchObject({
      code: 'SLUICE_ERR_MASTER_KEY_MISMATCH',
    });
    const second = await startSluice({ databaseUrl, env: { SLUICE_MASTER_KEY: MASTER_KEY } });
    try {
      const after = (await second.request({ method: 'GET', url: second.pipesUrl })).json.result;
      expect(stable(after)).toEqual(stable(before));
      const patched = await second.request({
        method: 'PATCH',
        url: `${second.pipesUrl}/${before[0].id}`,
        body: { name: 'renamed' },
      });
      expect(patched.statusCode).toBe(200);
      // With PostgreSQL nothing is cached: each GET reads the row anew and makes its JSON.
      const read = await second.request({ method: 'GET', url: `${second.pipesUrl}/${before[0].id}` });
      expect(read.json.result).toEqual(patched.json.result);
      const rows = await second.sluice.store.db.query<{ secrets: string }>('select secrets from pipes');
      expect(rows.every((row) => row.secrets.startsWith('v1:'))).toBe(true);
      expect(JSON.stringify(rows)).not.toContain('S3-SECRET-never-returned');
    } finally {
      await second.close();
    }
  });
});
