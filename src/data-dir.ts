import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from './config.js';
import { CodedError, type ErrorCode } from './errors.js';

export const LOCK_FILE = 'sluice.lock';

/** What the lock file tells another process about the one holding the data directory. */
export interface LockInfo {
  pid: number;
  /** The server's base URL once it listens; absent while a CLI command holds the directory. */
  url?: string;
  startedAt: string;
}

export class DataDirBusyError extends Error {
  readonly code: ErrorCode = 'SLUICE_ERR_DATA_DIR_BUSY';

  constructor(
    readonly dataDir: string,
    readonly holder: LockInfo,
  ) {
    super(
      holder.url
        ? `${dataDir} is in use by a Sluice server (pid ${holder.pid}) at ${holder.url}`
        : `${dataDir} is in use by another Sluice process (pid ${holder.pid})`,
    );
  }
}

/**
 * Embedded PGlite (and chDB) cannot be opened by two processes at once; a second opener would
 * corrupt the files. One lock file per data directory, created exclusively, says who holds it;
 * a lock whose process is gone is stale and taken over.
 */
export class DataDirLock {
  private constructor(
    readonly dataDir: string,
    private info: LockInfo,
  ) {}

  static async acquire(dataDir: string): Promise<DataDirLock> {
    await mkdir(dataDir, { recursive: true }).catch((error: NodeJS.ErrnoException) => {
      throw unusable(dataDir, error);
    });
    const info: LockInfo = { pid: process.pid, startedAt: new Date().toISOString() };
    const path = join(dataDir, LOCK_FILE);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      try {
        await writeFile(path, JSON.stringify(info), { flag: 'wx', mode: 0o600 });
        return new DataDirLock(dataDir, info);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw unusable(dataDir, error as Error);
      }
      const holder = await readLock(dataDir);
      if (holder && isAlive(holder.pid)) throw new DataDirBusyError(dataDir, holder);
      await rm(path, { force: true });
    }
    // Three stale locks in a row, each taken by another process first: starts racing for it.
    throw new CodedError(
      'SLUICE_ERR_DATA_DIR_BUSY',
      `could not lock ${dataDir}: other processes took its lock file (${LOCK_FILE}) each time; start one Sluice at a time`,
    );
  }

  async setUrl(url: string): Promise<void> {
    this.info = { ...this.info, url };
    await writeFile(join(this.dataDir, LOCK_FILE), JSON.stringify(this.info), { mode: 0o600 });
  }

  async release(): Promise<void> {
    const holder = await readLock(this.dataDir);
    if (holder?.pid === process.pid) await rm(join(this.dataDir, LOCK_FILE), { force: true });
  }
}

/** A data directory this process cannot make or write: the user's to put right, named so. */
function unusable(dataDir: string, error: NodeJS.ErrnoException): ConfigError {
  const why = error.code === 'EEXIST' || error.code === 'ENOTDIR' ? 'a file is in the way' : error.code;
  return new ConfigError([
    `SLUICE_DATA_DIR (--data-dir): ${dataDir} cannot be used as the data directory (${why ?? error.message}): give a directory this user may write`,
  ]);
}

/** The live holder of a data directory, if any. */
export async function liveHolder(dataDir: string): Promise<LockInfo | undefined> {
  const holder = await readLock(dataDir);
  return holder && isAlive(holder.pid) ? holder : undefined;
}

async function readLock(dataDir: string): Promise<LockInfo | undefined> {
  try {
    return JSON.parse(await readFile(join(dataDir, LOCK_FILE), 'utf8')) as LockInfo;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
