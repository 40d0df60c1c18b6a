import type { Service } from '../../store/index.js';
import type {
  DiscoverySource,
  PostgresConnection,
  PostgresTables,
  SchemaDiscovery,
} from '../sources/index.js';

/**
 * What discovery asks of the pipe runtime, the only place a source meets an engine: the fields of
 * a source no pipe reads yet, and a PostgreSQL server's tables. Problems of the source are
 * ValidationErrors naming the field.
 */
export interface DiscoveryRuntime {
  discoverSchema(source: DiscoverySource, service: Service): Promise<SchemaDiscovery>;
  postgresTables(connection: PostgresConnection, service: Service): Promise<PostgresTables>;
}

/** Told when a service's database pipes get other resources (PATCH .../pipesCdcScaling). */
export interface CdcCapacityListener {
  cdcScalingChanged(serviceId: string, replicaCpuMillicores: number): void;
}
