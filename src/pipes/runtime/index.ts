export { registerPipeMetrics } from './metrics.js';
export { PipeSupervisor, RUNNING_STATES } from './supervisor.js';
