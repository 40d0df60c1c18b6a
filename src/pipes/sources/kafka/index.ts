import type { SourceConnector } from '../contract.js';
import { kafkaProblems } from './checks.js';
import { KAFKA_VIRTUAL_COLUMNS } from './messages.js';
import { openKafka } from './reader.js';

/** Kafka and every service that speaks its protocol (Redpanda, Confluent, MSK, Event Hubs, ...). */
export const kafkaConnector: SourceConnector = {
  kind: 'kafka',
  virtualColumns: KAFKA_VIRTUAL_COLUMNS,
  createProblems: kafkaProblems,
  open: openKafka,
};

export { discoverKafka } from './discover.js';
