export { checker, type Checker } from './checker.js';
export { NonEmpty, StringEnum, StrictObject, Integer } from './types.js';
