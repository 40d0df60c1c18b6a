import { type Problem, ServiceUnavailableError, ValidationError } from '../../errors.js';
import type { IdentityService } from '../../identity/index.js';
import { checker } from '../../schema/index.js';
import type { ServiceScope } from '../index.js';
import { redactAll, secretValues } from '../runtime-port.js';
import { SOURCE_KINDS, withoutUnset } from '../schema/index.js';
import { splitSecrets } from '../secrets.js';
import { SOURCE_RULES } from '../source-rules.js';
import type {
  DiscoverySource,
  PostgresConnection,
  PostgresTables,
  SchemaDiscovery,
} from '../sources/index.js';
import type { DiscoveryRuntime } from './port.js';
import { PostgresTablesBody, SchemaDiscoveryBody } from './schema.js';

const checkDiscovery = checker(SchemaDiscoveryBody);
const checkTables = checker(PostgresTablesBody);

/**
 * Reads a source before any pipe does: the fields of its first records (schema discovery) and a
 * PostgreSQL server's tables. Bodies are validated as a create body's source is; nothing is
 * created or stored; secrets sent are used for the one request and appear in no answer or log.
 */
export class PipeDiscovery {
  private runtime: DiscoveryRuntime | undefined;

  constructor(private readonly identity: IdentityService) {}

  attach(runtime: DiscoveryRuntime): void {
    this.runtime = runtime;
  }

  async discoverSchema(scope: ServiceScope, sent: unknown): Promise<SchemaDiscovery> {
    const body = withoutUnset(sent);
    const service = await this.identity.getService(scope.organizationId, scope.serviceId);
    throwIfAny([...checkDiscovery(body), ...sourceRuleProblems(body)]);
    const { source } = body as SchemaDiscoveryBody;
    return redacted(source, () => this.require().discoverSchema(source as DiscoverySource, service));
  }

  async postgresTables(scope: ServiceScope, sent: unknown): Promise<PostgresTables> {
    const body = withoutUnset(sent);
    const service = await this.identity.getService(scope.organizationId, scope.serviceId);
    throwIfAny(checkTables(body));
    const { source } = body as PostgresTablesBody;
    return redacted(source, () =>
      this.require().postgresTables(source.postgres as PostgresConnection, service),
    );
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

/** Exactly one kind, and that kind's rules of a create body (credentials that fit authentication, ...). */
function sourceRuleProblems(body: unknown): Problem[] {
  const source = (body as { source?: Record<string, unknown> } | undefined)?.source;
  if (typeof source !== 'object' || source === null) return [];
  const kinds = SOURCE_KINDS.filter((kind) => source[kind] !== undefined);
  if (kinds.length !== 1) {
    const message =
      kinds.length === 0
        ? `Required: give one source kind, one of ${SOURCE_KINDS.join(', ')}`
        : `Give exactly one source kind, got ${kinds.join(' and ')}`;
    return [{ path: 'source', message }];
  }
  const kind = kinds[0] as (typeof SOURCE_KINDS)[number];
  const config = source[kind];
  const problems: Problem[] = [];
  if (typeof config === 'object' && config !== null)
    SOURCE_RULES[kind](config as Record<string, unknown>, `source.${kind}`, problems);
  return problems;
}

/** A source's own problems name no secret it was given: engine and SDK messages may quote them. */
async function redacted<T>(source: object, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    const secrets = secretValues(splitSecrets({ source } as Record<string, unknown>).secrets);
    throw new ValidationError(error.problems.map((p) => ({ ...p, message: redactAll(p.message, secrets) })));
  }
}

function throwIfAny(problems: Problem[]): void {
  if (problems.length > 0) throw new ValidationError(problems);
}
