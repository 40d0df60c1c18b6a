import { type Problem, ServiceUnavailableError, ValidationError } from '../../errors.js';
import type { IdentityService } from '../../identity/index.js';
import { CheckedShape, type Checker, checker } from '../../schema/index.js';
import type { ServiceScope } from '../index.js';
import { PipeRules } from '../rules.js';
import { redactAll, secretValues } from '../runtime-port.js';
import { type PipeSchemas, pipeSchemas, withoutUnset } from '../schema/index.js';
import { type SecretPaths, secretPathsOf, splitSecrets } from '../secrets.js';
import type {
  DiscoverySource,
  PostgresConnection,
  PostgresTables,
  SchemaDiscovery,
  SourceKinds,
} from '../sources/index.js';
import type { DiscoveryRuntime } from './port.js';
import { PostgresTablesBody } from './schema.js';

const checkTables = checker(PostgresTablesBody);

/**
 * Reads a source before any pipe does: the fields of its first records (schema discovery) and a
 * PostgreSQL server's tables. Bodies are validated as a create body's source is; nothing is
 * created or stored; secrets sent are used for the one request and appear in no answer or log.
 */
export class PipeDiscovery {
  private runtime: DiscoveryRuntime | undefined;
  /** The schemas of the kinds this Sluice runs: `SchemaDiscoveryBody` for the route. */
  readonly schemas: PipeSchemas;
  private readonly checkDiscovery: Checker;
  private readonly rules: PipeRules;
  private readonly secretPaths: SecretPaths;

  constructor(
    private readonly identity: IdentityService,
    kinds: SourceKinds,
  ) {
    this.schemas = pipeSchemas(kinds.list);
    this.checkDiscovery = checker(this.schemas.SchemaDiscoveryBody);
    this.rules = new PipeRules(kinds, this.schemas);
    this.secretPaths = secretPathsOf(kinds.list);
  }

  attach(runtime: DiscoveryRuntime): void {
    this.runtime = runtime;
  }

  async discoverSchema(scope: ServiceScope, sent: unknown): Promise<SchemaDiscovery> {
    const body = withoutUnset(sent);
    const service = await this.identity.getService(scope.organizationId, scope.serviceId);
    // Exactly one kind, and that kind's rules of a create body (credentials that fit authentication, ...).
    const problems = this.checkDiscovery(body);
    const shape = new CheckedShape(problems);
    if (shape.readable('')) this.rules.sourceRules((body as { source: unknown }).source, shape, problems);
    throwIfAny(problems);
    const { source } = body as { source: DiscoverySource };
    return this.redacted(source, () => this.require().discoverSchema(source, service));
  }

  async postgresTables(scope: ServiceScope, sent: unknown): Promise<PostgresTables> {
    const body = withoutUnset(sent);
    const service = await this.identity.getService(scope.organizationId, scope.serviceId);
    throwIfAny(checkTables(body));
    const { source } = body as PostgresTablesBody;
    return this.redacted(source, () =>
      this.require().postgresTables(source.postgres as PostgresConnection, service),
    );
  }

  /** A source's own problems name no secret it was given: engine and SDK messages may quote them. */
  private async redacted<T>(source: object, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      const secrets = secretValues(splitSecrets({ source }, this.secretPaths).secrets);
      throw new ValidationError(
        error.problems.map((p) => ({ ...p, message: redactAll(p.message, secrets) })),
      );
    }
  }

  private require(): DiscoveryRuntime {
    if (!this.runtime) {
      throw new ServiceUnavailableError(
        'SLUICE_ERR_PIPES_DISABLED',
        'this server runs no pipes, so it reads no sources',
      );
    }
    return this.runtime;
  }
}

function throwIfAny(problems: Problem[]): void {
  if (problems.length > 0) throw new ValidationError(problems);
}
