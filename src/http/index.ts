export { parseBasic } from './auth.js';
export { createMetricsRegistry } from './metrics.js';
export { buildServer, type ServerDeps } from './server.js';
export { readTls, type TlsFiles, TlsFilesError, type TlsMaterial } from './tls.js';
