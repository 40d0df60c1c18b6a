import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { CodedError, SluiceError } from '../errors.js';
import type { EmbeddedEngineOptions } from './chdb/embedded-engine.js';
import { EmbeddedEngine } from './chdb/embedded-engine.js';
import { type SandboxPolicy, type SandboxStatus, sandboxStatus } from './chdb/sandbox.js';

type EngineRoom = NonNullable<EmbeddedEngineOptions['sandbox']>['room'];

import { DiskUsage } from './disk-usage.js';
import type { Engine } from './engine.js';
import { dropMovedStageParts } from './stages.js';

/** What the registry needs to know of a database service. */
export interface ServiceRef {
  id: string;
  organizationId: string;
  kind: 'embedded' | 'clickhouse';
}

export interface EngineRegistryOptions {
  dataDir: string;
  /** The only directory `file://` pipe URLs read; source readers see it read-only. */
  localFilesDir: string;
  /** The sandbox every engine process starts in (sandbox.ts). */
  sandbox: SandboxPolicy;
  /** Each service engine's memory in all (SLUICE_ENGINE_MEMORY_MB); undefined: the engine's default. */
  engineMemoryBytes?: number | undefined;
  /** An engine process idle this long stops, and starts again on the next statement; 0: never. */
  engineIdleMs?: number | undefined;
  /** Where a service engine's start says what it put right (parts a cut-short move left behind). */
  logger?: Logger | undefined;
  /** Each service's disk quota in bytes (SLUICE_SERVICE_DISK_MB); 0 or absent: none. */
  serviceDiskBytes?: number | undefined;
  /**
   * Without a sandbox, the one organization whose SQL may still reach its engines (the
   * operator's); undefined when every organization's may (sandboxed, or the risk accepted).
   */
  onlyOrganization?: string | undefined;
}

/**
 * What a service's engine sees besides its own directory: nothing, and no network. The data
 * directory is hidden whole, so no path under it (the master key, another service) exists.
 */
export function serviceEngineRoom(options: { dataDir: string }): EngineRoom {
  return { readable: [], network: false, hidden: [options.dataDir] };
}

/**
 * What a service's source reader sees besides its own directory: the service's scratch space
 * (where it writes batches), the local files directory (read-only), and the network; never the
 * service's data, another service or the data directory's root.
 */
export function sourceReaderRoom(
  options: { dataDir: string; localFilesDir: string },
  scratch: string,
): EngineRoom {
  return { writable: [scratch], readable: [options.localFilesDir], network: true, hidden: [options.dataDir] };
}

/**
 * Engines run without the sandbox here and the operator has not accepted the risk: a tenant's SQL
 * (queries, expressions, column types of a pipe's table) would reach the host unguarded.
 */
export class UnsandboxedSqlError extends SluiceError {
  constructor(reason: string) {
    super(
      'SLUICE_ERR_UNSANDBOXED_SQL',
      403,
      `this server runs its engines without a sandbox (${reason}), so only the operator organization's SQL reaches them; the operator can install bubblewrap, or accept the risk with SLUICE_ALLOW_UNSANDBOXED_SQL=true (README, "Security")`,
      { label: 'SLUICE_ERR_UNSANDBOXED_SQL' },
    );
  }
}

/**
 * One engine per database service, opened on first use: embedded services keep their data under
 * `<data dir>/services/<service id>`. Every engine process runs in the operating-system sandbox:
 * a service's engine sees its own directory and no network; a service's source reader sees its
 * own directory, the service's scratch space and the local files directory, and the network.
 */
export class EngineRegistry {
  private readonly engines = new Map<string, Engine>();
  private readonly readers = new Map<string, Engine>();

  private readonly disk: DiskUsage;

  constructor(private readonly options: EngineRegistryOptions) {
    this.disk = new DiskUsage(options.serviceDiskBytes ?? 0);
  }

  /**
   * Throws DiskQuotaError while the service's directory is over its quota (disk-usage.ts): pipes
   * wait and statements may only read or free space.
   */
  checkDisk(service: ServiceRef): Promise<void> {
    return this.disk.check(this.servicePath(service));
  }

  sandboxStatus(): SandboxStatus & { tenantSql: 'every organization' | 'operator only' } {
    return {
      ...sandboxStatus(this.options.sandbox),
      tenantSql: this.options.onlyOrganization === undefined ? 'every organization' : 'operator only',
    };
  }

  private get dataDir(): string {
    return this.options.dataDir;
  }

  /**
   * The engine that reads a service's pipes' sources (object storage through its table functions,
   * messages and rows Sluice wrote into the scratch space) and writes each batch into the service's
   * scratch space, where the service's engine loads it. It runs no tenant SQL, so it is not
   * confined by grants; its sandbox never shows it a service's data or another service's batches.
   */
  sourceReaderFor(service: ServiceRef): Engine {
    let reader = this.readers.get(service.id);
    if (!reader) {
      const scratch = join(this.servicePath(service), 'scratch');
      reader = new EmbeddedEngine(join(this.dataDir, 'readers', service.id), {
        confined: false,
        idleStopMs: this.options.engineIdleMs ?? 0,
        sandbox: { policy: this.options.sandbox, room: sourceReaderRoom(this.options, scratch) },
      });
      this.readers.set(service.id, reader);
    }
    return reader;
  }

  /** Whether the service's engine ever opened its data (an embedded service that was never used has none). */
  hasData(service: ServiceRef): boolean {
    return service.kind === 'embedded' && existsSync(this.servicePath(service));
  }

  /**
   * The engine of a service, for anything that may carry a tenant's SQL: queries, expressions,
   * tiles, a pipe's table. Refused (UnsandboxedSqlError) where engines run without the sandbox,
   * but for the operator organization or when the operator accepted the risk.
   */
  engineFor(service: ServiceRef): Engine {
    const only = this.options.onlyOrganization;
    if (only !== undefined && service.organizationId !== only) {
      throw new UnsandboxedSqlError(
        this.options.sandbox.kind === 'none' ? this.options.sandbox.reason : 'bwrap',
      );
    }
    return this.ownEngineFor(service);
  }

  /** The engine of a service for Sluice's own statements alone (upgrades, dropping stages). */
  ownEngineFor(service: ServiceRef): Engine {
    let engine = this.engines.get(service.id);
    if (!engine) {
      if (service.kind !== 'embedded')
        throw new CodedError('SLUICE_ERR_UNSUPPORTED', `service kind ${service.kind} is not supported yet`);
      const logger = this.options.logger;
      engine = new EmbeddedEngine(this.servicePath(service), {
        confined: true,
        // Before any other statement: a move an engine kill cut short must not land twice.
        onStart: async (started) => {
          const dropped = await dropMovedStageParts(started);
          if (dropped.length === 0) return;
          logger?.warn(
            { serviceId: service.id, parts: dropped },
            'parts moved into their destination just before the engine was killed were still in their stage: dropped from the stage, so they land once',
          );
        },
        idleStopMs: this.options.engineIdleMs ?? 0,
        ...(this.options.engineMemoryBytes ? { memoryLimitBytes: this.options.engineMemoryBytes } : {}),
        sandbox: { policy: this.options.sandbox, room: serviceEngineRoom(this.options) },
      });
      this.engines.set(service.id, engine);
    }
    return engine;
  }

  private servicePath(service: ServiceRef): string {
    return join(this.dataDir, 'services', service.id);
  }

  async closeAll(): Promise<void> {
    const engines = [...this.engines.values(), ...this.readers.values()];
    this.engines.clear();
    this.readers.clear();
    await Promise.all(engines.map((engine) => engine.close()));
  }
}
