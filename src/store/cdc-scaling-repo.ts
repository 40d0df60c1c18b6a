import type { Queryable } from './db.js';

/** The resources a service gives its database pipes, as `PATCH .../pipesCdcScaling` set them. */
export interface CdcScalingRow {
  serviceId: string;
  replicaCpuMillicores: number;
  replicaMemoryGb: number;
  updatedAt: Date;
}

export class CdcScalingRepo {
  constructor(private readonly db: Queryable) {}

  /** The service's stored scaling; undefined when it was never set. */
  async get(serviceId: string): Promise<CdcScalingRow | undefined> {
    const rows = await this.db.query<CdcScalingRow>(
      `select service_id as "serviceId", replica_cpu_millicores as "replicaCpuMillicores",
              replica_memory_gb as "replicaMemoryGb", updated_at as "updatedAt"
         from cdc_scaling where service_id = $1`,
      [serviceId],
    );
    return rows[0];
  }

  async put(row: CdcScalingRow): Promise<void> {
    await this.db.query(
      `insert into cdc_scaling (service_id, replica_cpu_millicores, replica_memory_gb, updated_at)
       values ($1, $2, $3, $4)
       on conflict (service_id) do update set replica_cpu_millicores = excluded.replica_cpu_millicores,
         replica_memory_gb = excluded.replica_memory_gb, updated_at = excluded.updated_at`,
      [row.serviceId, row.replicaCpuMillicores, row.replicaMemoryGb, row.updatedAt],
    );
  }
}
