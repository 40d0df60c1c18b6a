import { resolve } from 'node:path';
import type { Logger } from 'pino';
import { type EngineRegistry, EngineUnavailableError } from '../../engine/index.js';
import { type Problem, ServiceUnavailableError } from '../../errors.js';
import type { Service } from '../../store/index.js';
import type { CheckContext } from '../sources/index.js';
import { scratchOf, targetTablesOf } from './source-ports.js';

/** What the runtime reaches sources with, and the node's rules for reaching them. */
export interface SourceAccessDeps {
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
 * How the runtime reads a source outside a pipe's run (create and update checks, schema discovery,
 * the PostgreSQL table listing): with the service's engines and the node's rules, answering in
 * words that show no directory of the server.
 */
export class SourceAccess {
  constructor(private readonly deps: SourceAccessDeps) {}

  context(service: Service, validateSamples = false): CheckContext {
    const { engines, localFilesDir, allowPrivateSources, allowPlaintextKafka, awsRegion, logger } = this.deps;
    return {
      target: targetTablesOf(engines.engineFor(service)),
      scratch: scratchOf(engines.engineFor(service)),
      sourceReader: engines.sourceReaderFor(service),
      localFilesDir,
      validateSamples,
      allowPrivateSources,
      allowPlaintextKafka,
      awsRegion,
      organizationId: service.organizationId,
      logger,
    };
  }

  /**
   * The work's answer; an engine that cannot answer now (still held by the engine of a server just
   * killed, or stopped) is a 503 to try again, not a 500.
   */
  async answering<T>(work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (error) {
      if (!(error instanceof EngineUnavailableError)) throw error;
      throw new ServiceUnavailableError(
        'SLUICE_ERR_ENGINE_UNAVAILABLE',
        `the database service's engine cannot answer now (${error.message.replace(/ for path '[^']*'/, '')}): try again in a few seconds`,
        { cause: error },
      );
    }
  }

  /** Problems as a client sees them: paths as the user wrote them (hidePaths). */
  shown(problems: Problem[]): Problem[] {
    return problems.map((problem) => ({ ...problem, message: this.hidePaths(problem.message) }));
  }

  /** `file://` paths as the user wrote them, `<data dir>` for the rest of the server's directories. */
  hidePaths(text: string): string {
    const files = `${resolve(this.deps.localFilesDir)}/`;
    return text.split(files).join('file:///').split(resolve(this.deps.dataDir)).join('<data dir>');
  }
}
