export * from './discovery/index.js';
export { ensureHistory, PIPE_HISTORY_SOURCE } from './history/index.js';
export type { PipeConfig } from './model.js';
export { toRecord } from './model.js';
export { PipesService, type ServiceScope } from './pipes-service.js';
export { errorRowsQuery, PermanentError } from './records/index.js';
export { sourceStatusFields } from './runtime-port.js';
export type { PipeRecord } from './schema/index.js';
export * as pipeSchemas from './schema/index.js';
export { type SecretPaths, secretPathsOf } from './secrets.js';
export {
  type AnySourceKind,
  SOURCE_KINDS,
  type SourceKind,
  SourceKinds,
} from './sources/index.js';
export { PIPE_COMMANDS, PIPE_STATES, type PipeCommand, type PipeState } from './state.js';
