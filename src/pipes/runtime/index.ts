export { errorRowsQuery } from './bad-records.js';
export { PermanentError } from './errors.js';
export { registerPipeMetrics } from './metrics.js';
export { PipeSupervisor, RUNNING_STATES } from './supervisor.js';
