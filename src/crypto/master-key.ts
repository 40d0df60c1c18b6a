import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, parseMasterKey } from '../config.js';

export const MASTER_KEY_FILE = 'master.key';
/** A rotation's new key, written before the store is sealed with it and renamed over the old one after. */
export const NEW_MASTER_KEY_FILE = 'master.key.new';

/**
 * The master key comes from SLUICE_MASTER_KEY when set; otherwise from a 0600 key file in the data
 * directory, created on first start. Losing that file makes stored secrets unreadable, which the
 * README says next to backups.
 */
export async function loadMasterKey(dataDir: string, configured: string | undefined): Promise<Buffer> {
  const found = await readMasterKey(dataDir, configured);
  if (found) return found;
  await mkdir(dataDir, { recursive: true });
  const key = randomBytes(32);
  // 'wx' fails if another process created the file meanwhile; then that key is the one to use.
  try {
    await writeFile(join(dataDir, MASTER_KEY_FILE), `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return loadMasterKey(dataDir, undefined);
    throw error;
  }
  await chmod(join(dataDir, MASTER_KEY_FILE), 0o600);
  return key;
}

/** The master key in use (SLUICE_MASTER_KEY, else the key file); undefined when there is none yet. */
export async function readMasterKey(
  dataDir: string,
  configured: string | undefined,
): Promise<Buffer | undefined> {
  if (configured !== undefined) {
    const key = parseMasterKey(configured);
    if (key === undefined)
      throw new ConfigError([
        'SLUICE_MASTER_KEY (--master-key) must be 32 bytes written as 64 hex characters or base64; make one with `openssl rand -hex 32`',
      ]);
    return key;
  }
  return readKeyFile(join(dataDir, MASTER_KEY_FILE));
}

/** A rotation's new key written and not yet put in place (an interrupted rotation), if any. */
export function readNewMasterKey(dataDir: string): Promise<Buffer | undefined> {
  return readKeyFile(join(dataDir, NEW_MASTER_KEY_FILE));
}

/** Writes a rotation's new key beside the old one, on disk before anything is sealed with it. */
export async function writeNewMasterKey(dataDir: string, key: Buffer): Promise<void> {
  const file = await open(join(dataDir, NEW_MASTER_KEY_FILE), 'w', 0o600);
  try {
    await file.writeFile(`${key.toString('hex')}\n`);
    await file.sync();
  } finally {
    await file.close();
  }
}

/** Puts a rotation's new key in the old one's place (one rename: the file holds one key or the other). */
export async function installNewMasterKey(dataDir: string): Promise<void> {
  await rename(join(dataDir, NEW_MASTER_KEY_FILE), join(dataDir, MASTER_KEY_FILE));
  const dir = await open(dataDir, 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

/** Forgets a new key that was never used (a rotation that stopped before sealing anything). */
export async function removeNewMasterKey(dataDir: string): Promise<void> {
  await rm(join(dataDir, NEW_MASTER_KEY_FILE), { force: true });
}

async function readKeyFile(path: string): Promise<Buffer | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const key = parseMasterKey(text);
  if (key === undefined)
    throw new ConfigError([
      `${path} does not hold a 32-byte hex key: put back the file from a backup (no other key opens the secrets sealed with it)`,
    ]);
  return key;
}
