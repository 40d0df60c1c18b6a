export { PermanentError } from './errors.js';
export { PipeSupervisor, RUNNING_STATES } from './supervisor.js';
