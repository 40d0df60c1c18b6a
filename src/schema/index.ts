export { type Checker, checker } from './checker.js';
export { LIMITS } from './limits.js';
export { Integer, NonEmpty, Nullable, StrictObject, StringEnum } from './types.js';
