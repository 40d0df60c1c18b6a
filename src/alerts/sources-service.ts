import {
  describeTable,
  EngineError,
  type EngineRegistry,
  expressionProblem,
  fragmentProblem,
} from '../engine/index.js';
import { NotFoundError, type Problem, ValidationError } from '../errors.js';
import type { IdentityService } from '../identity/index.js';
import { checker } from '../schema/index.js';
import type { SourceRow, Store } from '../store/index.js';
import { BuiltInSources, type PipeHistoryTable } from './builtin-sources.js';
import { AreaNotFoundError, listPage, type Page, type TeamScope } from './context.js';
import { checkQueries } from './evaluation/index.js';
import { isId, newId } from './ids.js';
import { SourceBody, type SourceRecord } from './schemas.js';

const checkBody = checker(SourceBody);
/** Longest a create-time check of an expression may run in the engine (it reads no rows). */
const CHECK_TIMEOUT_MS = 10_000;

/** Sources: a table of one of the team organization's services, and its timestamp expression. */
export class SourcesService {
  private readonly builtIns: BuiltInSources;

  constructor(
    private readonly store: Store,
    private readonly identity: IdentityService,
    private readonly engines: EngineRegistry,
    /** Where the services' pipes keep their history: each service's built-in source reads it. */
    pipeHistory?: PipeHistoryTable,
  ) {
    this.builtIns = new BuiltInSources(pipeHistory);
  }

  /** The team's sources: the built-in ones of its organization's services first, then its own. */
  async list(scope: TeamScope, query: unknown): Promise<Page<SourceRecord>> {
    const repo = this.store.repos.alerts;
    const builtIn = await this.builtInOf(scope);
    return listPage(
      query,
      async (limit, offset) => {
        const first = builtIn.slice(offset, offset + limit);
        const own = await repo.listSources(
          scope.teamId,
          limit - first.length,
          Math.max(0, offset - builtIn.length),
        );
        return [...first, ...own];
      },
      async () => builtIn.length + (await repo.countSources(scope.teamId)),
      toRecord,
    );
  }

  /** A source of the team (its own, or a built-in one), or undefined. */
  async find(scope: TeamScope, id: string): Promise<SourceRow | undefined> {
    if (!isId(id)) return undefined;
    const own = await this.store.repos.alerts.getSource(scope.teamId, id);
    if (own) return own;
    const services = await this.identity.listServices(scope.organizationId);
    const builtIn = this.builtIns.of(scope.teamId, services).find((source) => source.id === id);
    const service = services.find((s) => s.id === builtIn?.serviceId);
    if (service) await this.builtIns.prepare(service);
    return builtIn;
  }

  /** The built-in sources of the team's organization, one per service. */
  async builtInOf(scope: TeamScope): Promise<SourceRow[]> {
    return this.builtIns.of(scope.teamId, await this.identity.listServices(scope.organizationId));
  }

  async get(scope: TeamScope, id: string): Promise<SourceRecord> {
    return toRecord(await this.require(scope, id));
  }

  /** The stored source, for tiles and evaluation. */
  async require(scope: TeamScope, id: string): Promise<SourceRow> {
    const row = await this.find(scope, id);
    if (!row) throw new AreaNotFoundError('Source');
    return row;
  }

  /** The team's own source, to change or delete: a built-in one is refused, naming why. */
  private async requireOwn(scope: TeamScope, id: string): Promise<SourceRow> {
    const own = isId(id) ? await this.store.repos.alerts.getSource(scope.teamId, id) : undefined;
    if (own) return own;
    await this.require(scope, id);
    throw new ValidationError([
      {
        path: 'id',
        message: "This is a built-in source (its service's pipe history): it cannot be changed or deleted",
      },
    ]);
  }

  async create(scope: TeamScope, body: unknown): Promise<SourceRecord> {
    const valid = await this.validate(scope, body);
    const now = new Date();
    const row = toRow(scope, newId(), valid, now, now);
    await this.store.repos.alerts.putSource(row);
    return toRecord(row);
  }

  async replace(scope: TeamScope, id: string, body: unknown): Promise<SourceRecord> {
    const existing = await this.requireOwn(scope, id);
    const valid = await this.validate(scope, body);
    const row = toRow(scope, existing.id, valid, existing.createdAt, new Date());
    await this.store.repos.alerts.putSource(row);
    return toRecord(row);
  }

  /** Why a team's expression is not one expression, read by the engine of the source's service. */
  async expressionProblem(scope: TeamScope, source: SourceRow, text: string): Promise<string | undefined> {
    const service = await this.identity.getService(scope.organizationId, source.serviceId);
    return expressionProblem(this.engines.engineFor(service), text);
  }

  /**
   * Why a query that reads no rows (evaluation's checkQueries) fails on the source's table, or
   * undefined: it runs read-only, with a time limit, on the source's service.
   */
  async checkProblem(scope: TeamScope, serviceId: string, sql: string): Promise<string | undefined> {
    const service = await this.identity.getService(scope.organizationId, serviceId);
    try {
      await this.engines.engineFor(service).query(sql, { readonly: true, timeoutMs: CHECK_TIMEOUT_MS });
      return undefined;
    } catch (error) {
      if (!(error instanceof EngineError) || error.code === undefined) throw error;
      return `does not run on the source's table: ${error.message.replace(/\s*:\s*In scope[\s\S]*$/, '')}`;
    }
  }

  async delete(scope: TeamScope, id: string): Promise<void> {
    const existing = await this.requireOwn(scope, id);
    await this.store.repos.alerts.deleteSource(existing.id);
  }

  /** The service must be one of the team's organization, and the table must exist in it. */
  private async validate(scope: TeamScope, body: unknown): Promise<SourceBody> {
    const problems: Problem[] = checkBody(body);
    const expression = (body as { timestampValueExpression?: unknown } | undefined)?.timestampValueExpression;
    const unusable = typeof expression === 'string' ? fragmentProblem(expression) : undefined;
    if (unusable) problems.push({ path: 'timestampValueExpression', message: `Not usable: ${unusable}` });
    if (problems.length) throw new ValidationError(problems);
    const source = body as SourceBody;
    let service: Awaited<ReturnType<IdentityService['getService']>>;
    try {
      service = await this.identity.getService(scope.organizationId, source.serviceId);
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      throw new ValidationError([
        { path: 'serviceId', message: "No such service in your team's organization" },
      ]);
    }
    const { databaseName, tableName } = source.from;
    const engine = this.engines.engineFor(service);
    const notOne = await expressionProblem(engine, source.timestampValueExpression);
    if (notOne) throw new ValidationError([{ path: 'timestampValueExpression', message: notOne }]);
    const columns = await describeTable(engine, databaseName, tableName);
    if (!columns) {
      throw new ValidationError([
        {
          path: 'from.tableName',
          message: `${databaseName}.${tableName} does not exist in service ${service.name}`,
        },
      ]);
    }
    const [[field, sql] = ['', '']] = checkQueries({
      databaseName,
      tableName,
      timestampExpression: source.timestampValueExpression,
    });
    const problem = await this.checkProblem(scope, source.serviceId, sql);
    if (problem) throw new ValidationError([{ path: field, message: problem }]);
    return source;
  }
}

function toRow(scope: TeamScope, id: string, body: SourceBody, createdAt: Date, updatedAt: Date): SourceRow {
  return {
    id,
    teamId: scope.teamId,
    name: body.name,
    kind: body.kind,
    serviceId: body.serviceId,
    databaseName: body.from.databaseName,
    tableName: body.from.tableName,
    timestampExpression: body.timestampValueExpression,
    createdAt,
    updatedAt,
  };
}

function toRecord(row: SourceRow): SourceRecord {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    serviceId: row.serviceId,
    from: { databaseName: row.databaseName, tableName: row.tableName },
    timestampValueExpression: row.timestampExpression,
  };
}
