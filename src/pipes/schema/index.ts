export * from './enums.js';
export * from './patch.js';
export * from './pipe.js';
export * from './record.js';
export * from './sources.js';
export * from './unset.js';
