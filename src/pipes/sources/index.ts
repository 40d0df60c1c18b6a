import type { SourceKind } from '../schema/enums.js';
import type { SourceConnector } from './contract.js';
import { kafkaConnector } from './kafka/index.js';
import { objectStorageConnector } from './object-storage/index.js';

export type {
  CheckContext,
  PartitionStatus,
  RunContext,
  SourceConnector,
  SourceRun,
  SourceStatus,
} from './contract.js';

/** Every kind of source that can run; a kind missing here is stored and then Failed as not supported yet. */
const CONNECTORS: Partial<Record<SourceKind, SourceConnector>> = {
  kafka: kafkaConnector,
  objectStorage: objectStorageConnector,
};

export function connectorFor(kind: SourceKind | string): SourceConnector | undefined {
  return CONNECTORS[kind as SourceKind];
}
