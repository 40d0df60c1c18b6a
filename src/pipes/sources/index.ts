import { kafkaKind } from './kafka/index.js';
import type { AnySourceKind } from './kind.js';
import { kinesisKind } from './kinesis/index.js';
import { objectStorageKind } from './object-storage/index.js';
import { postgresKind } from './postgres/index.js';

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
export { type AnySourceKind, type ImmutableField, type SourceKind, SourceKinds } from './kind.js';
// The ports a source reaches the engines through, which the runtime implements.
export type { BatchSink, Scratch, SinkLoad, SourceReader, TargetTables, TextLoad } from './ports.js';
export {
  type ListedTable,
  listPostgresTables,
  type PostgresConnection,
  PostgresSource,
  type PostgresTables,
  type TableProblem,
} from './postgres/index.js';

/**
 * The registry: every kind of source Sluice ships, one line each, in the order the API lists
 * them. The source schemas, the secret paths and the connectors are derived from it
 * (docs/adding-a-source-kind.md); a kind the store holds and no kind here names fails.
 */
export const SOURCE_KINDS = [
  kafkaKind,
  objectStorageKind,
  kinesisKind,
  postgresKind,
] as const satisfies readonly AnySourceKind[];
