import { createHash } from 'node:crypto';
import type { Service, SourceRow } from '../store/index.js';

/**
 * Where a service's pipes keep their history (README, "Pipe history"): given by the composition
 * root (src/app.ts), so the alerts area needs to know nothing else of pipes.
 */
export interface PipeHistoryTable {
  databaseName: string;
  tableName: string;
  timestampExpression: string;
  /** Makes the table in a service where it is missing (no pipe has written it yet). */
  prepare(service: Service): Promise<void>;
}

/**
 * The built-in sources: one per service of the team's organization, its pipes' history per
 * minute, which every team of the organization sees without making it. Their ids are derived from
 * the service's (24 hexadecimal characters, as every id of the area), so a tile or an alert keeps
 * naming the same source; they cannot be changed or deleted.
 */
/** How long a made table is taken to be there before it is checked again. */
const PREPARED_FOR_MS = 60_000;

export class BuiltInSources {
  /**
   * When this process last made each service's table where it was missing: again after a minute,
   * so a table or view an admin dropped comes back for the next evaluation even when no pipe
   * writes (its pipes idle), at a few cheap statements a minute for a source in use.
   */
  private readonly prepared = new Map<string, number>();

  constructor(
    private readonly table: PipeHistoryTable | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /** Makes the built-in source's table in `service` when this process has not within the minute. */
  async prepare(service: Service): Promise<void> {
    const last = this.prepared.get(service.id);
    if (!this.table || (last !== undefined && this.now() - last < PREPARED_FOR_MS)) return;
    await this.table.prepare(service);
    this.prepared.set(service.id, this.now());
  }

  /** The built-in sources of these services, seen by `teamId`. */
  of(teamId: string, services: readonly Service[]): SourceRow[] {
    const table = this.table;
    if (!table) return [];
    return services.map((service) => ({
      id: builtInId(service.id),
      teamId,
      name: `Pipe history of ${service.name}`,
      kind: 'log',
      serviceId: service.id,
      databaseName: table.databaseName,
      tableName: table.tableName,
      timestampExpression: table.timestampExpression,
      createdAt: service.createdAt,
      updatedAt: service.createdAt,
    }));
  }
}

function builtInId(serviceId: string): string {
  return createHash('sha256').update(`pipe-history:${serviceId}`).digest('hex').slice(0, 24);
}
