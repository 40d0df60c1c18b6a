import { randomBytes } from 'node:crypto';
import { holdStore } from '../app.js';
import { type Config, parseMasterKey } from '../config.js';
import {
  installNewMasterKey,
  MASTER_KEY_CHECK,
  MasterKeyMismatchError,
  NEW_MASTER_KEY_FILE,
  opensMasterKeyCheck,
  readMasterKey,
  readNewMasterKey,
  removeNewMasterKey,
  SecretBox,
  sealedMasterKeyCheck,
  writeNewMasterKey,
} from '../crypto/index.js';
import { liveHolder } from '../data-dir.js';
import type { SealedPlace, Store } from '../store/index.js';
import { CliError } from './http-backend.js';

const COUNTED_AS: Record<SealedPlace, keyof RotationReport['resealed']> = {
  pipe: 'pipes',
  webhook: 'webhooks',
  cleanup: 'cleanups',
};

export interface RotationReport {
  /** Sealed values opened with the old key and sealed with the new one, by where they live. */
  resealed: { pipes: number; webhooks: number; cleanups: number };
  /** Access tokens revoked: they are digests made with the old key, which no new key verifies. */
  tokensRevoked: number;
  /** Where the new key is: the key file, or SLUICE_MASTER_KEY to set before the next start. */
  keyIn: 'file' | 'environment';
  /** An earlier rotation stopped after sealing the store with its new key: this one only put it in place. */
  finishedEarlier: boolean;
}

/** What a rotation did, for the person who ran it (no key is printed). */
export function rotationLines(report: RotationReport): string[] {
  if (report.finishedEarlier) {
    return ['An earlier rotation had sealed the store with its new key: that key is now the key file.'];
  }
  const { pipes, webhooks, cleanups } = report.resealed;
  return [
    `Rotated the master key: sealed again the secrets of ${pipes} pipe(s), ${webhooks} webhook(s) and ${cleanups} deleted pipe(s) awaiting their source's cleanup.`,
    `Revoked ${report.tokensRevoked} access token(s): they were digests made with the old key. Create new ones (sluice tokens create --user <name>).`,
    report.keyIn === 'file'
      ? 'The new key is in <data dir>/master.key: back it up as you did the old one.'
      : 'Set SLUICE_MASTER_KEY to the new key before starting the server again.',
  ];
}

/**
 * `sluice master-key rotate`: every secret of the store is opened with the master key in use and
 * sealed with a new one, in one store transaction, while no server holds the data directory
 * (README, "Security"). With the key file, the new key is written beside it first
 * (master.key.new) and renamed over it after the transaction: a crash anywhere leaves a store and
 * a key that open each other, or a store sealed with the new file's key, which running the command
 * again puts in place. With SLUICE_MASTER_KEY, the new key is given (`newKeyText`) and set by the
 * operator before the next start.
 */
export async function rotateMasterKey(
  config: Config,
  newKeyText: string | undefined,
): Promise<RotationReport> {
  const holder = await liveHolder(config.dataDir);
  if (holder) {
    throw new CliError(
      `a Sluice process (pid ${holder.pid}) holds ${config.dataDir}: stop every server of this store first, then rotate`,
    );
  }
  const keyIn = config.masterKey === undefined ? 'file' : 'environment';
  if (keyIn === 'environment' && newKeyText === undefined) {
    throw new CliError(
      'SLUICE_MASTER_KEY is set: give the new key with --new-key (32 bytes as hex or base64, such as `openssl rand -hex 32`), and set SLUICE_MASTER_KEY to it before the next start',
    );
  }
  const newKey = newKeyText === undefined ? randomBytes(32) : parseMasterKey(newKeyText);
  if (!newKey)
    throw new CliError('--new-key: not a 32-byte key as hex or base64 (`openssl rand -hex 32` makes one)');
  // The same lock and store as the server's (src/core.ts), with the key in use read, never made.
  const {
    masterKey: oldKey,
    store,
    opened,
  } = await holdStore(config, {
    readKey: async () => {
      const inUse = await readMasterKey(config.dataDir, config.masterKey);
      if (!inUse)
        throw new CliError(
          `${config.dataDir} has no master key yet: nothing is sealed, so there is nothing to rotate`,
        );
      if (inUse.equals(newKey)) throw new CliError('--new-key: the new key is the key in use; give another');
      return inUse;
    },
  });
  try {
    return await rotate(store, config, { oldKey, newKey, keyIn });
  } finally {
    await opened.close();
  }
}

/**
 * A transaction that failed may still have committed (its answer lost on the way): the new key
 * goes only when the store's check shows the old key still in use, and is put in place when it
 * shows the new one. When the store cannot say, the new key stays beside the old, for the command
 * run again to finish or start over.
 */
async function afterFailedTransaction(
  store: Store,
  dataDir: string,
  boxes: { from: SecretBox; to: SecretBox },
  error: unknown,
): Promise<void> {
  const check = await store.repos.identity.getMeta(MASTER_KEY_CHECK).catch(() => undefined);
  if (check !== undefined && opensMasterKeyCheck(boxes.from, check)) return removeNewMasterKey(dataDir);
  if (check !== undefined && opensMasterKeyCheck(boxes.to, check)) {
    await installNewMasterKey(dataDir);
    throw new CliError(
      `the store answered the rotation with an error (${String(error)}), but it is sealed with the new key, which is now the key file: run the command again only to rotate once more`,
    );
  }
  throw new CliError(
    `the rotation failed (${String(error)}) and the store cannot say which key it is sealed with now: ${NEW_MASTER_KEY_FILE} is kept beside the key file; run the command again once the store answers, and it finishes or starts over`,
  );
}

async function rotate(
  store: Store,
  config: Config,
  keys: { oldKey: Buffer; newKey: Buffer; keyIn: 'file' | 'environment' },
): Promise<RotationReport> {
  const { keyIn } = keys;
  const from = new SecretBox(keys.oldKey);
  const check = await store.repos.identity.getMeta(MASTER_KEY_CHECK);
  const none = { resealed: { pipes: 0, webhooks: 0, cleanups: 0 }, tokensRevoked: 0, keyIn };
  if (check !== undefined && !opensMasterKeyCheck(from, check)) {
    const pending = keyIn === 'file' ? await readNewMasterKey(config.dataDir) : undefined;
    if (pending && opensMasterKeyCheck(new SecretBox(pending), check)) {
      await installNewMasterKey(config.dataDir);
      return { ...none, finishedEarlier: true };
    }
    throw new MasterKeyMismatchError();
  }
  const to = new SecretBox(keys.newKey);
  if (keyIn === 'file') await writeNewMasterKey(config.dataDir, keys.newKey);
  let report: RotationReport;
  try {
    report = await store.transaction(async (repos) => {
      const resealed = { pipes: 0, webhooks: 0, cleanups: 0 };
      for (const value of await repos.sealed.all()) {
        await repos.sealed.replace(value, to.seal(from.open(value.sealed, value.context), value.context));
        resealed[COUNTED_AS[value.place]] += 1;
      }
      await repos.identity.setMeta(MASTER_KEY_CHECK, sealedMasterKeyCheck(to));
      const tokensRevoked = await repos.identity.revokeAllAccessTokens(new Date());
      return { resealed, tokensRevoked, keyIn, finishedEarlier: false };
    });
  } catch (error) {
    if (keyIn === 'file') await afterFailedTransaction(store, config.dataDir, { from, to }, error);
    throw error;
  }
  if (keyIn === 'file') await installNewMasterKey(config.dataDir);
  return report;
}
