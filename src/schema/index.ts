export { type Checker, checker } from './checker.js';
export { Integer, NonEmpty, StrictObject, StringEnum } from './types.js';
