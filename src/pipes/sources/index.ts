import type { SourceKind } from '../schema/enums.js';
import type { SourceConnector } from './contract.js';
import { kafkaConnector } from './kafka/index.js';
import { kinesisConnector } from './kinesis/index.js';
import { objectStorageConnector } from './object-storage/index.js';
import { postgresConnector } from './postgres/index.js';

export type {
  CheckContext,
  CleanupContext,
  PartitionStatus,
  ReplicationStatus,
  RunContext,
  ShardStatus,
  SourceConnector,
  SourceRun,
  SourceStatus,
  TableStatus,
  WrittenTable,
} from './contract.js';

/** Every kind of source, each with its connector (a kind the store holds and no connector knows fails). */
const CONNECTORS: Record<SourceKind, SourceConnector> = {
  kafka: kafkaConnector,
  kinesis: kinesisConnector,
  objectStorage: objectStorageConnector,
  postgres: postgresConnector,
};

/** The kinds whose sources say something of a pipe that does not run (`idleStatus`). */
export function kindsWithIdleStatus(): string[] {
  return Object.values(CONNECTORS)
    .filter((connector) => connector.idleStatus)
    .map((connector) => connector.kind);
}

export function connectorFor(kind: SourceKind | string): SourceConnector | undefined {
  return CONNECTORS[kind as SourceKind];
}
