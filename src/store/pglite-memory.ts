import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { PGlite } from '@electric-sql/pglite';
import { CodedError } from '../errors.js';

/**
 * PostgreSQL's defaults size buffers for a server; the metadata store is a few megabytes of
 * pipes, keys and alerts. These keep the embedded database's share of the Sluice process small
 * (about 120 MB of WebAssembly memory instead of about 250 MB). Measured by `npm run bench -- memory`.
 */
export const PGLITE_START_PARAMS = [
  ...PGlite.defaultStartParams,
  '-c',
  'shared_buffers=16MB',
  '-c',
  'temp_buffers=1MB',
  '-c',
  'wal_buffers=1MB',
  '-c',
  'work_mem=4MB',
  '-c',
  'maintenance_work_mem=16MB',
];

const INITDB_SCRIPT =
  'require(process.argv[1]).PGlite.create(process.argv[2]).then((db) => db.close()).catch((error) => { console.error(error); process.exit(1); })';

/**
 * Creates a new PGlite directory (initdb) in a short-lived child process. WebAssembly memory never
 * shrinks, and initdb grows PGlite's to about 700 MB: done in this process, a first start would
 * hold that for as long as Sluice runs. A directory that already exists is left alone.
 */
export async function initPgliteDirectory(dir: string): Promise<void> {
  if (existsSync(join(dir, 'PG_VERSION'))) return;
  // The CommonJS entry, so the child needs no module resolution of its own.
  const entry = pgliteEntry();
  try {
    await promisify(execFile)(process.execPath, ['-e', INITDB_SCRIPT, entry, dir], {
      maxBuffer: 4 * 1024 * 1024,
    });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new CodedError(
      'SLUICE_ERR_METADATA_STORE',
      `could not create the metadata database in ${dir}: ${stderr || String(error)}`,
      { cause: error },
    );
  }
}

let tieringSet = false;

/**
 * PGlite's WebAssembly stays on V8's baseline compiler: optimising its hot functions in the
 * background costs about 30 MB that the allocator keeps for good, and buys nothing measurable for
 * the metadata store's small queries (3,000 insert-and-read transactions: 1.5 s either way). Set
 * before the module is compiled; it applies to this process's WebAssembly only.
 */
export function keepPgliteOnBaselineCompiler(): void {
  if (tieringSet) return;
  setFlagsFromString('--no-wasm-tier-up');
  tieringSet = true;
}

function pgliteEntry(): string {
  return createRequire(import.meta.url).resolve('@electric-sql/pglite');
}
