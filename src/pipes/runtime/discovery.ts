import { ValidationError } from '../../errors.js';
import type { Service } from '../../store/index.js';
import type { DiscoveryRuntime } from '../discovery/index.js';
import { sourceKindOf } from '../model.js';
import type { SourceKinds } from '../sources/index.js';
import {
  DiscoveryProblem,
  type DiscoverySource,
  listPostgresTables,
  type PostgresConnection,
  type PostgresTables,
  type SchemaDiscovery,
} from '../sources/index.js';
import { SourceAccess, type SourceAccessDeps } from './source-access.js';

/**
 * Reads a source that no pipe reads yet (schema discovery, the PostgreSQL table listing): as the
 * create checks do, the source meets the service's engines here, in the runtime, and nothing is
 * created or stored. A problem of the source is a 400 that names the field to fix.
 */
export class SourceDiscovery implements DiscoveryRuntime {
  private readonly access: SourceAccess;

  constructor(private readonly deps: SourceAccessDeps & { kinds: SourceKinds }) {
    this.access = new SourceAccess(deps);
  }

  async discoverSchema(source: DiscoverySource, service: Service): Promise<SchemaDiscovery> {
    const discover = this.deps.kinds.get(sourceKindOf(source))?.discover;
    if (!discover) throw new ValidationError([{ path: 'source', message: 'This kind offers no discovery' }]);
    return this.answering(discover(source, this.access.context(service)));
  }

  async postgresTables(connection: PostgresConnection, service: Service): Promise<PostgresTables> {
    return this.answering(listPostgresTables(connection, this.access.context(service)));
  }

  /** The source's problems as a 400 naming the field; an engine that cannot answer now, a 503. */
  private async answering<T>(work: Promise<T>): Promise<T> {
    try {
      return await this.access.answering(work);
    } catch (error) {
      if (!(error instanceof DiscoveryProblem)) throw error;
      throw new ValidationError(this.access.shown([error.problem]));
    }
  }
}
