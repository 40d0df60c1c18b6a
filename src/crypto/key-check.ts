import type { ErrorCode } from '../errors.js';
import { SEALED_CONTEXT } from './contexts.js';
import type { SecretBox } from './secret-box.js';

const CANARY = 'sluice master key check';
const CONTEXT = SEALED_CONTEXT.masterKeyCheck;
/** Where the store keeps the sealed check (sluice_meta). */
export const MASTER_KEY_CHECK = 'master_key_check';

export class MasterKeyMismatchError extends Error {
  readonly code: ErrorCode = 'SLUICE_ERR_MASTER_KEY_MISMATCH';

  constructor() {
    super(
      'the master key does not open the secrets in this metadata store: set SLUICE_MASTER_KEY (or restore <data dir>/master.key) to the key this store was first used with (after an interrupted `sluice master-key rotate`, run it again)',
    );
  }
}

/** The sealed check of a master key, as the store keeps it. */
export function sealedMasterKeyCheck(box: SecretBox): string {
  return box.seal(CANARY, CONTEXT);
}

/** Whether `box`'s key is the one the store's check was sealed with. */
export function opensMasterKeyCheck(box: SecretBox, kept: string): boolean {
  try {
    return box.open(kept, CONTEXT) === CANARY;
  } catch {
    return false;
  }
}

/**
 * Seals a known text into the store on first use and opens it on every start, so a node started
 * with another master key (a new data directory next to a shared PostgreSQL, say) stops at once
 * with a clear message instead of failing later on every pipe.
 */
export async function checkMasterKey(
  box: SecretBox,
  meta: { putMetaOnce(name: string, value: string): Promise<string> },
): Promise<void> {
  const kept = await meta.putMetaOnce(MASTER_KEY_CHECK, sealedMasterKeyCheck(box));
  if (!opensMasterKeyCheck(box, kept)) throw new MasterKeyMismatchError();
}
