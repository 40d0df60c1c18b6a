export * from './enums.js';
export * from './kinds.js';
export * from './patch.js';
export * from './pipe.js';
export * from './unset.js';
