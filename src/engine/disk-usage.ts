import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { SluiceError } from '../errors.js';

/**
 * A service is over its disk quota (SLUICE_SERVICE_DISK_MB): its pipes wait (Degraded, nothing
 * claimed, so nothing lost) and its statements may only read or free space until it is under.
 */
export class DiskQuotaError extends SluiceError {
  constructor(usedBytes: number, quotaBytes: number) {
    super(
      'SLUICE_ERR_DISK_QUOTA',
      400,
      `the service uses ${mb(usedBytes)} MB of disk, over its quota of ${mb(quotaBytes)} MB (SLUICE_SERVICE_DISK_MB): only reads and statements that free space run, and pipes wait, until it is under. TRUNCATE TABLE and DROP TABLE ... SYNC free it at once; a plain DROP, DELETE or DROP PARTITION frees it minutes later`,
      { label: 'SLUICE_ERR_DISK_QUOTA' },
    );
  }
}

const mb = (bytes: number) => Math.ceil(bytes / 1024 / 1024);

/** How long a measure of a service's directory stands (a walk of every part's files). */
const MEASURE_MS = 5_000;

/**
 * What each service's directory holds on disk, measured by walking it (tables, parts not yet
 * removed, scratch files and results, the engine's /tmp), at most every MEASURE_MS per service.
 */
export class DiskUsage {
  private readonly measured = new Map<string, { at: number; bytes: Promise<number> }>();

  constructor(private readonly quotaBytes: number) {}

  /** Throws DiskQuotaError when the directory is over the quota; nothing when there is none. */
  async check(dir: string): Promise<void> {
    if (this.quotaBytes <= 0) return;
    const used = await this.usedBytes(dir);
    if (used > this.quotaBytes) throw new DiskQuotaError(used, this.quotaBytes);
  }

  async usedBytes(dir: string): Promise<number> {
    const known = this.measured.get(dir);
    if (known && Date.now() - known.at < MEASURE_MS) return known.bytes;
    const bytes = sizeOf(dir);
    this.measured.set(dir, { at: Date.now(), bytes });
    bytes.catch(() => this.measured.delete(dir));
    return bytes;
  }
}

/** The bytes of every file below `path` (links not followed; what vanishes meanwhile counts 0). */
async function sizeOf(path: string): Promise<number> {
  const info = await lstat(path).catch(() => undefined);
  if (!info) return 0;
  if (!info.isDirectory()) return info.size;
  const names = await readdir(path).catch(() => [] as string[]);
  let total = 0;
  for (const name of names) total += await sizeOf(join(path, name));
  return total;
}
