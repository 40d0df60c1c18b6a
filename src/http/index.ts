export { parseBasic } from './auth.js';
export { createMetricsRegistry } from './metrics.js';
export { buildServer, type ServerDeps } from './server.js';
