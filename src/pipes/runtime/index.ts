export { CdcCapacity } from './cdc-capacity.js';
export { SourceDiscovery } from './discovery.js';
export { registerPipeMetrics } from './metrics.js';
export { PipeSupervisor, RUNNING_STATES } from './supervisor.js';
