import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';
import { Opened, openCore } from './core.js';
import { MasterKeyMismatchError } from './crypto/index.js';
import { createLogger } from './log.js';

const logger = createLogger('silent');
const dirs: string[] = [];

async function configWith(masterKey: Buffer, dataDir?: string) {
  const dir = dataDir ?? (await mkdtemp(join(tmpdir(), 'sluice-core-')));
  if (!dataDir) dirs.push(dir);
  return loadConfig({ SLUICE_DATA_DIR: dir, SLUICE_MASTER_KEY: masterKey.toString('hex') });
}

afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('Opened', () => {
  it('closes last opened first, tries every close, and throws the first failure', async () => {
    const closed: string[] = [];
    const opened = new Opened(logger);
    opened.add('lock', 'lock', async (what) => void closed.push(what));
    opened.add('store', 'store', async (what) => {
      closed.push(what);
      throw new Error('the store would not close');
    });
    opened.add('engines', 'engines', async (what) => void closed.push(what));
    await expect(opened.close()).rejects.toThrow('the store would not close');
    expect(closed).toEqual(['engines', 'store', 'lock']);
    // Closed once: a second close has nothing left to close.
    await opened.close();
    expect(closed).toEqual(['engines', 'store', 'lock']);
  });

  it("after a failed start, closes what was opened and throws the start's error", async () => {
    const closed: string[] = [];
    const opened = new Opened(logger);
    opened.add('lock', 'lock', async (what) => void closed.push(what));
    opened.add('store', 'store', async () => {
      throw new Error('closing failed too');
    });
    await expect(opened.closeAfter(new Error('the start failed'))).rejects.toThrow('the start failed');
    expect(closed).toEqual(['lock']);
  });
});

describe('openCore', () => {
  it('reports the first credentials of an empty directory once, and only then', async () => {
    const key = randomBytes(32);
    const config = await configWith(key);
    const made: unknown[] = [];
    const first = await openCore(config, { logger, onBootstrap: (bootstrap) => made.push(bootstrap) });
    expect(first.bootstrap).toBeDefined();
    expect(made).toEqual([first.bootstrap]);
    await first.opened.close();
    const again = await openCore(config, { logger, onBootstrap: (bootstrap) => made.push(bootstrap) });
    expect(again.bootstrap).toBeUndefined();
    expect(made).toHaveLength(1);
    await again.opened.close();
  });

  it('holds the data directory: a second open fails until the first is closed', async () => {
    const config = await configWith(randomBytes(32));
    const core = await openCore(config, { logger });
    await expect(openCore(config, { logger })).rejects.toMatchObject({ code: 'SLUICE_ERR_DATA_DIR_BUSY' });
    await core.opened.close();
    const after = await openCore(config, { logger });
    await after.opened.close();
  });

  it('with the wrong master key fails, and gives back the lock and the store it opened', async () => {
    const key = randomBytes(32);
    const config = await configWith(key);
    await (await openCore(config, { logger })).opened.close();
    const wrong = await configWith(randomBytes(32), config.dataDir);
    await expect(openCore(wrong, { logger })).rejects.toBeInstanceOf(MasterKeyMismatchError);
    // Nothing of the failed start still holds the directory.
    const right = await openCore(config, { logger });
    expect(right.bootstrap).toBeUndefined();
    await right.opened.close();
  });
});
