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

  constructor(private readonly dataDir: string) {}

  engineFor(service: ServiceRef): Engine {
    let engine = this.engines.get(service.id);
    if (!engine) {
      if (service.kind !== 'embedded') throw new Error(`service kind ${service.kind} is not supported yet`);
      engine = new EmbeddedEngine(join(this.dataDir, 'services', service.id));
      this.engines.set(service.id, engine);
    }
    return engine;
  }

  async closeAll(): Promise<void> {
    const engines = [...this.engines.values()];
    this.engines.clear();
    await Promise.all(engines.map((engine) => engine.close()));
  }
}
