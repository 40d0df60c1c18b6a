export { discoverKafka } from './discover.js';
export { kafkaConnector, kafkaKind } from './kind.js';
