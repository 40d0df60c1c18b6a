import type { SecretBox } from './secret-box.js';

const CANARY = 'sluice master key check';
const CONTEXT = 'master-key-check';

export class MasterKeyMismatchError extends Error {
  constructor() {
    super(
      'the master key does not open the secrets in this metadata store: set SLUICE_MASTER_KEY (or restore <data dir>/master.key) to the key this store was first used with',
    );
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
  const kept = await meta.putMetaOnce('master_key_check', box.seal(CANARY, CONTEXT));
  let opened: string | undefined;
  try {
    opened = box.open(kept, CONTEXT);
  } catch {
    opened = undefined;
  }
  if (opened !== CANARY) throw new MasterKeyMismatchError();
}
