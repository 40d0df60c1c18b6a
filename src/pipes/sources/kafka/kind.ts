import type { ReportsStatus, SourceConnector } from '../contract.js';
import type { SourceKind } from '../kind.js';
import { kafkaProblems } from './checks.js';
import { KafkaPatch, KafkaSource } from './config.js';
import { discoverKafka } from './discover.js';
import { KAFKA_VIRTUAL_COLUMNS } from './messages.js';
import { openKafka } from './reader.js';
import { kafkaRules } from './rules.js';
import { kafkaStatusShape } from './status-shape.js';

/** Kafka and every service that speaks its protocol (Redpanda, Confluent, MSK, Event Hubs, ...). */
export const kafkaConnector: SourceConnector & ReportsStatus = {
  kind: 'kafka',
  virtualColumns: KAFKA_VIRTUAL_COLUMNS,
  createProblems: kafkaProblems,
  open: openKafka,
  statusShape: kafkaStatusShape,
};

export const kafkaKind: SourceKind<typeof KafkaSource, 'kafka'> = {
  name: 'kafka',
  label: 'Kafka',
  config: KafkaSource,
  patch: KafkaPatch,
  immutableFields: {},
  mergedOnPatch: ['schemaRegistry'],
  applyDefaults(kafka, pipeId) {
    kafka.type ??= 'kafka';
    kafka.consumerGroup ??= `pipes-${pipeId}`;
  },
  rules: kafkaRules,
  connector: kafkaConnector,
  discover: discoverKafka,
};
