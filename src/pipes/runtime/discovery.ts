import { resolve } from 'node:path';
import type { Logger } from 'pino';
import { type EngineRegistry, EngineUnavailableError } from '../../engine/index.js';
import { ServiceUnavailableError, ValidationError } from '../../errors.js';
import type { Service } from '../../store/index.js';
import type { DiscoveryRuntime } from '../discovery/index.js';
import { sourceKindOf } from '../model.js';
import {
  type DiscoveryContext,
  DiscoveryProblem,
  type DiscoverySource,
  discovererFor,
  listPostgresTables,
  type PostgresConnection,
  type PostgresTables,
  type SchemaDiscovery,
} from '../sources/index.js';

export interface SourceDiscoveryDeps {
  engines: EngineRegistry;
  localFilesDir: string;
  /** The data directory, whose absolute path no message to a user shows. */
  dataDir: string;
  allowPrivateSources: boolean;
  allowPlaintextKafka: boolean;
  awsRegion: string | undefined;
  logger: Logger;
}

/**
 * Reads a source that no pipe reads yet (schema discovery, the PostgreSQL table listing): as the
 * create checks do, the source meets the service's engines here, in the runtime, and nothing is
 * created or stored. A problem of the source is a 400 that names the field to fix.
 */
export class SourceDiscovery implements DiscoveryRuntime {
  constructor(private readonly deps: SourceDiscoveryDeps) {}

  async discoverSchema(source: DiscoverySource, service: Service): Promise<SchemaDiscovery> {
    const discover = discovererFor(sourceKindOf(source));
    return this.answering(() => discover(source, this.context(service)));
  }

  async postgresTables(connection: PostgresConnection, _service: Service): Promise<PostgresTables> {
    const { allowPrivateSources, logger } = this.deps;
    return this.answering(() => listPostgresTables(connection, { allowPrivateSources, logger }));
  }

  private context(service: Service): DiscoveryContext {
    const { engines, localFilesDir, allowPrivateSources, allowPlaintextKafka, awsRegion, logger } = this.deps;
    return {
      service: engines.engineFor(service),
      sourceReader: engines.sourceReaderFor(service),
      localFilesDir,
      allowPrivateSources,
      allowPlaintextKafka,
      awsRegion,
      organizationId: service.organizationId,
      logger,
    };
  }

  /**
   * The source's problems as a 400 naming the field; an engine that cannot answer now (still
   * starting, held by a server just killed) as a 503 to try again.
   */
  private async answering<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof DiscoveryProblem) {
        const { path, message } = error.problem;
        throw new ValidationError([{ path, message: this.hidePaths(message) }]);
      }
      if (error instanceof EngineUnavailableError) {
        throw new ServiceUnavailableError(
          "the database service's engine cannot answer now: try again in a few seconds",
          { cause: error },
        );
      }
      throw error;
    }
  }

  /** `file://` paths as the user wrote them, `<data dir>` for the rest of the server's directories. */
  private hidePaths(text: string): string {
    const files = `${resolve(this.deps.localFilesDir)}/`;
    return text.split(files).join('file:///').split(resolve(this.deps.dataDir)).join('<data dir>');
  }
}
