export { discoverKinesis } from './discover.js';
export { kinesisConnector, kinesisKind } from './kind.js';
