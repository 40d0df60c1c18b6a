import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { opensMasterKeyCheck, SecretBox } from '../src/crypto/index.js';
import { openStore } from '../src/store/index.js';
import { sluiceCli } from './support/cli.js';
import { kafkaPipe, kinesisPipe, postgresPipe } from './support/pipes.js';
import { BOOTSTRAP_TOKEN, startSluice, type TestSluice } from './support/sluice.js';

// `sluice master-key rotate` on a data directory no server holds: every sealed secret opens with
// the new key only, the servers start with it, and access tokens (digests of the old key) are revoked.

const keyOf = async (dataDir: string) => (await readFile(join(dataDir, 'master.key'), 'utf8')).trim();

/** Every sealed value of the store, and whether each opens with `key` (the store opened directly). */
async function sealedOpenWith(dataDir: string, key: string): Promise<{ count: number; open: boolean }> {
  const store = await openStore({ dataDir });
  try {
    const box = new SecretBox(Buffer.from(key, 'hex'));
    const values = await store.repos.sealed.all();
    const open = values.every((value) => {
      try {
        box.open(value.sealed, value.context);
        return true;
      } catch {
        return false;
      }
    });
    const check = (await store.repos.identity.getMeta('master_key_check')) as string;
    return { count: values.length, open: open && opensMasterKeyCheck(box, check) };
  } finally {
    await store.close();
  }
}

/**
 * A control plane with three pipes, a webhook and a deleted pipe awaiting its source's cleanup,
 * each holding secrets, then stopped.
 */
async function storeWithSecrets(): Promise<string> {
  const s = await startSluice({ runtime: false, env: { SLUICE_ALLOW_PRIVATE_WEBHOOKS: 'true' } });
  for (const body of [kafkaPipe(), kinesisPipe(), postgresPipe()]) {
    const created = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(created.statusCode, created.body).toBe(200);
  }
  const gone = await s.request({ method: 'POST', url: s.pipesUrl, body: { ...kafkaPipe(), name: 'gone' } });
  const deleted = await s.request({ method: 'DELETE', url: `${s.pipesUrl}/${gone.json.result.id}` });
  expect(deleted.statusCode, deleted.body).toBe(200);
  const webhook = await s.request({
    method: 'POST',
    url: '/api/v2/webhooks',
    auth: `Bearer ${BOOTSTRAP_TOKEN}`,
    body: { name: 'hook', url: 'http://127.0.0.1:9/hook', headers: { Authorization: 'Bearer HOOK-SECRET' } },
  });
  expect(webhook.statusCode, webhook.body).toBe(200);
  await s.close({ keepData: true });
  return s.dataDir;
}

describe('sluice master-key rotate', () => {
  const dirs: string[] = [];
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await storeWithSecrets();
    dirs.push(dataDir);
  }, 120_000);
  afterAll(async () => {
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it('seals every secret with a new key file, revokes the access tokens, and the server starts with it', async () => {
    const old = await keyOf(dataDir);
    expect(await sealedOpenWith(dataDir, old)).toEqual({ count: 5, open: true });
    const rotated = await sluiceCli(['master-key', 'rotate'], { SLUICE_DATA_DIR: dataDir });
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stdout).toContain('the secrets of 3 pipe(s), 1 webhook(s) and 1 deleted pipe(s) awaiting');
    expect(rotated.stdout).toContain('Revoked 1 access token(s)');
    const fresh = await keyOf(dataDir);
    expect(fresh).not.toBe(old);
    expect(rotated.stdout + rotated.stderr).not.toContain(fresh);
    expect(await sealedOpenWith(dataDir, fresh)).toEqual({ count: 5, open: true });
    expect(await sealedOpenWith(dataDir, old)).toEqual({ count: 5, open: false });

    const s: TestSluice = await startSluice({ dataDir, runtime: false });
    try {
      const pipes = (await s.request({ method: 'GET', url: s.pipesUrl })).json.result;
      // A PATCH opens the pipe's sealed secrets and seals them again.
      const patched = await s.request({
        method: 'PATCH',
        url: `${s.pipesUrl}/${pipes[0].id}`,
        body: { name: 'renamed' },
      });
      expect(patched.statusCode, patched.body).toBe(200);
      const hello = await s.request({ method: 'GET', url: '/api/v2', auth: `Bearer ${BOOTSTRAP_TOKEN}` });
      expect(hello.statusCode).toBe(401);
    } finally {
      await s.close({ keepData: true });
    }
  }, 120_000);

  it('finishes a rotation that stopped after the store was sealed with the new key', async () => {
    const before = await keyOf(dataDir);
    const rotated = await sluiceCli(['master-key', 'rotate'], { SLUICE_DATA_DIR: dataDir });
    expect(rotated.code, rotated.stderr).toBe(0);
    // As if killed before the rename: the new key beside the old one, the store sealed with the new.
    const fresh = await keyOf(dataDir);
    await writeFile(join(dataDir, 'master.key.new'), `${fresh}\n`, { mode: 0o600 });
    await writeFile(join(dataDir, 'master.key'), `${before}\n`, { mode: 0o600 });
    const refused = await sluiceCli(['orgs', 'list'], { SLUICE_DATA_DIR: dataDir });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('after an interrupted `sluice master-key rotate`, run it again');
    const finished = await sluiceCli(['master-key', 'rotate'], { SLUICE_DATA_DIR: dataDir });
    expect(finished.code, finished.stderr).toBe(0);
    expect(finished.stdout).toContain('An earlier rotation had sealed the store with its new key');
    expect(await keyOf(dataDir)).toBe(fresh);
    expect((await sluiceCli(['orgs', 'list'], { SLUICE_DATA_DIR: dataDir })).code).toBe(0);
  }, 120_000);

  it('with SLUICE_MASTER_KEY: needs --new-key, and the server starts with the new key only', async () => {
    const dir = await storeWithSecrets();
    dirs.push(dir);
    // The store's key moves from the file to the environment, as an operator would set it.
    const old = await keyOf(dir);
    await rm(join(dir, 'master.key'));
    const env = { SLUICE_DATA_DIR: dir, SLUICE_MASTER_KEY: old };
    const missing = await sluiceCli(['master-key', 'rotate'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('SLUICE_MASTER_KEY is set: give the new key with --new-key');
    const bad = await sluiceCli(['master-key', 'rotate', '--new-key', 'short'], env);
    expect(bad.stderr).toContain('--new-key: not a 32-byte key');
    const next = 'b'.repeat(64);
    const rotated = await sluiceCli(['master-key', 'rotate', '--new-key', next], env);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stdout).toContain('Set SLUICE_MASTER_KEY to the new key');
    expect(await sealedOpenWith(dir, next)).toEqual({ count: 5, open: true });
    const withOld = await sluiceCli(['orgs', 'list'], env);
    expect(withOld.stderr).toContain('the master key does not open the secrets in this metadata store');
    expect((await sluiceCli(['orgs', 'list'], { ...env, SLUICE_MASTER_KEY: next })).code).toBe(0);
  }, 120_000);

  it('refuses while a server holds the data directory', async () => {
    const s = await startSluice({ runtime: false });
    dirs.push(s.dataDir);
    try {
      const refused = await sluiceCli(['master-key', 'rotate'], { SLUICE_DATA_DIR: s.dataDir });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/holds .*stop every server of this store first|is in use/);
    } finally {
      await s.close();
    }
  }, 120_000);
});
