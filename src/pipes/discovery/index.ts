export { CdcScalingService, DEFAULT_CDC_SCALING } from './cdc-scaling.js';
export { PipeDiscovery } from './discovery-service.js';
export type { CdcCapacityListener, DiscoveryRuntime } from './port.js';
export * as discoverySchemas from './schema.js';
