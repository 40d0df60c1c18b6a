export type { PipeConfig } from './model.js';
export { toRecord } from './model.js';
export { PipesService, type ServiceScope, validateCreateBody } from './pipes-service.js';
export { errorRowsQuery, PermanentError } from './records/index.js';
export { pipeRuleProblems } from './rules.js';
export type { PipeRecord } from './schema/index.js';
export * as pipeSchemas from './schema/index.js';
export { SECRET_PATHS } from './secrets.js';
export { PIPE_COMMANDS, PIPE_STATES, type PipeCommand, type PipeState } from './state.js';
