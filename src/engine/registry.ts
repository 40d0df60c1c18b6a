import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { EmbeddedEngine } from './chdb/embedded-engine.js';
import type { Engine } from './engine.js';

/** What the registry needs to know of a database service. */
export interface ServiceRef {
  id: string;
  kind: 'embedded' | 'clickhouse';
}

/**
 * One engine per database service, opened on first use: embedded services keep their data under
 * `<data dir>/services/<service id>`.
 */
export class EngineRegistry {
  private readonly engines = new Map<string, Engine>();
  private reader: Engine | undefined;

  constructor(private readonly dataDir: string) {}

  /**
   * The engine that reads pipes' sources (object storage through its table functions) and writes
   * each batch into the scratch directory of the service it is for. It holds no tenant data and
   * runs no tenant SQL, so it is the one engine not confined; it starts on first use.
   */
  sourceReader(): Engine {
    this.reader ??= new EmbeddedEngine(join(this.dataDir, 'source-reader'), { confined: false });
    return this.reader;
  }

  /** Whether the service's engine ever opened its data (an embedded service that was never used has none). */
  hasData(service: ServiceRef): boolean {
    return service.kind === 'embedded' && existsSync(this.servicePath(service));
  }

  engineFor(service: ServiceRef): Engine {
    let engine = this.engines.get(service.id);
    if (!engine) {
      if (service.kind !== 'embedded') throw new Error(`service kind ${service.kind} is not supported yet`);
      engine = new EmbeddedEngine(this.servicePath(service), { confined: true });
      this.engines.set(service.id, engine);
    }
    return engine;
  }

  private servicePath(service: ServiceRef): string {
    return join(this.dataDir, 'services', service.id);
  }

  async closeAll(): Promise<void> {
    const engines = [...this.engines.values(), ...(this.reader ? [this.reader] : [])];
    this.engines.clear();
    this.reader = undefined;
    await Promise.all(engines.map((engine) => engine.close()));
  }
}
