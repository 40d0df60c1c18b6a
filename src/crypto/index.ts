export { SEALED_CONTEXT } from './contexts.js';
export { credentialDigest, hashSecret, randomSecret, tokenDigest, verifySecret } from './hashing.js';
export {
  checkMasterKey,
  MASTER_KEY_CHECK,
  MasterKeyMismatchError,
  opensMasterKeyCheck,
  sealedMasterKeyCheck,
} from './key-check.js';
export {
  installNewMasterKey,
  loadMasterKey,
  MASTER_KEY_FILE,
  NEW_MASTER_KEY_FILE,
  readMasterKey,
  readNewMasterKey,
  removeNewMasterKey,
  writeNewMasterKey,
} from './master-key.js';
export { SecretBox } from './secret-box.js';
