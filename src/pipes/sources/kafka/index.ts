import type { ReportsStatus, SourceConnector } from '../contract.js';
import { kafkaProblems } from './checks.js';
import { KAFKA_VIRTUAL_COLUMNS } from './messages.js';
import { openKafka } from './reader.js';
import { kafkaStatusShape } from './status-shape.js';

/** Kafka and every service that speaks its protocol (Redpanda, Confluent, MSK, Event Hubs, ...). */
export const kafkaConnector: SourceConnector & ReportsStatus = {
  kind: 'kafka',
  virtualColumns: KAFKA_VIRTUAL_COLUMNS,
  createProblems: kafkaProblems,
  open: openKafka,
  statusShape: kafkaStatusShape,
};

export { discoverKafka } from './discover.js';
