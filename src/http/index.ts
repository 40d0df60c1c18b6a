export { buildServer, type ServerDeps } from './server.js';
export { createMetricsRegistry } from './metrics.js';
export { parseBasic } from './auth.js';
