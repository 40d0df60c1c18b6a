export { hashSecret, randomSecret, tokenDigest, verifySecret } from './hashing.js';
export { checkMasterKey, MasterKeyMismatchError } from './key-check.js';
export { loadMasterKey, MASTER_KEY_FILE } from './master-key.js';
export { SecretBox } from './secret-box.js';
