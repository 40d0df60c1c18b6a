import type { SourceKind } from '../schema/enums.js';
import type { SourceConnector } from './contract.js';
import type { DiscoveryContext, DiscoverySource, SchemaDiscovery } from './discovery.js';
import { discoverKafka, kafkaConnector } from './kafka/index.js';
import { discoverKinesis, kinesisConnector } from './kinesis/index.js';
import { discoverObjectStorage, objectStorageConnector } from './object-storage/index.js';
import { discoverPostgres, postgresConnector } from './postgres/index.js';

// The contract: the base interfaces, the capabilities a connector or a run may have, their guards.
export * from './contract.js';

export {
  type DiscoveredField,
  type DiscoveryContext,
  DiscoveryProblem,
  type DiscoverySource,
  type SchemaDiscovery,
} from './discovery.js';
export { isTlsCode, libraryFailureCode, NETWORK_CODES, nestedErrors } from './failure-code.js';
export {
  type ListedTable,
  listPostgresTables,
  type PostgresConnection,
  type PostgresTables,
  type TableProblem,
} from './postgres/index.js';

/** Every kind of source, each with its connector (a kind the store holds and no connector knows fails). */
const CONNECTORS: Record<SourceKind, SourceConnector> = {
  kafka: kafkaConnector,
  kinesis: kinesisConnector,
  objectStorage: objectStorageConnector,
  postgres: postgresConnector,
};

/** Every connector, for what the runtime composes of all kinds (the status response, the metrics). */
export function allConnectors(): SourceConnector[] {
  return Object.values(CONNECTORS);
}

export function connectorFor(kind: SourceKind | string): SourceConnector | undefined {
  return CONNECTORS[kind as SourceKind];
}

/** How each kind's source finds the fields of its first records (schema discovery). */
const DISCOVERERS: Record<
  SourceKind,
  (source: DiscoverySource, context: DiscoveryContext) => Promise<SchemaDiscovery>
> = {
  kafka: discoverKafka,
  kinesis: discoverKinesis,
  objectStorage: discoverObjectStorage,
  postgres: discoverPostgres,
};

export function discovererFor(kind: SourceKind) {
  return DISCOVERERS[kind];
}
