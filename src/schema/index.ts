export { type Checker, checker } from './checker.js';
export { LIMITS } from './limits.js';
export { isSecret, Secret, secretPaths, UsernamePassword, withoutSecrets } from './secret.js';
export { CheckedShape } from './shape.js';
export { Integer, NonEmpty, Nullable, StrictObject, StringEnum } from './types.js';
