export { discoverObjectStorage } from './discover.js';
export { objectStorageConnector, objectStorageKind } from './kind.js';
export { LocationError } from './location.js';
