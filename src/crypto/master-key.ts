import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseMasterKey } from '../config.js';

export const MASTER_KEY_FILE = 'master.key';

/**
 * The master key comes from SLUICE_MASTER_KEY when set; otherwise from a 0600 key file in the data
 * directory, created on first start. Losing that file makes stored secrets unreadable, which the
 * README says next to backups.
 */
export async function loadMasterKey(dataDir: string, configured: string | undefined): Promise<Buffer> {
  if (configured !== undefined) {
    const key = parseMasterKey(configured);
    if (key === undefined) throw new Error('SLUICE_MASTER_KEY is not a 32-byte hex or base64 key');
    return key;
  }
  const path = join(dataDir, MASTER_KEY_FILE);
  try {
    const key = parseMasterKey(await readFile(path, 'utf8'));
    if (key === undefined) throw new Error(`${path} does not hold a 32-byte hex key`);
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(dataDir, { recursive: true });
  const key = randomBytes(32);
  // 'wx' fails if another process created the file meanwhile; then that key is the one to use.
  try {
    await writeFile(path, `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return loadMasterKey(dataDir, undefined);
    throw error;
  }
  await chmod(path, 0o600);
  return key;
}
