import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { removeFiles } from './engine-process.js';

/** The names of result files in a service's scratch space (EmbeddedEngine.queryRows). */
const RESULT_PREFIX = 'result-';

/**
 * Scratch files a caller keeps between statements only while this process runs (the spare FIFOs
 * of src/pipes/records/stream-load.ts, the copies of src/pipes/records/copy-load.ts): removed,
 * with the result files, whenever the engine starts.
 */
export const TRANSIENT_SCRATCH_PREFIX = 'transient-';

/** A new result file's name in the scratch space. */
export function resultFileName(): string {
  return `${RESULT_PREFIX}${randomUUID()}.json`;
}

/**
 * Empties an engine's /tmp, and removes from its scratch space the results a killed server never
 * sent and the transient files: what a killed one left behind would fill the disk. (A result being
 * sent now is open, and reads on.)
 */
export async function clearLeftovers(enginePath: string): Promise<void> {
  await rm(join(enginePath, 'tmp'), { recursive: true, force: true });
  await removeFiles(
    join(enginePath, 'scratch'),
    (name) => name.startsWith(RESULT_PREFIX) || name.startsWith(TRANSIENT_SCRATCH_PREFIX),
  );
}
