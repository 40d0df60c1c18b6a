import { fragmentProblem } from '../engine/index.js';
import { type Problem, ValidationError } from '../errors.js';
import { checker } from '../schema/index.js';
import type { DashboardRow, SourceRow, Store } from '../store/index.js';
import { AreaNotFoundError, listPage, type Page, type TeamScope } from './context.js';
import { checkQueries } from './evaluation/index.js';
import { isId, newId } from './ids.js';
import { LuceneError, luceneToSql } from './lucene.js';
import { DashboardBody, type DashboardRecord, type TileConfig } from './schemas.js';
import type { SourcesService } from './sources-service.js';

const checkBody = checker(DashboardBody);

/** What dashboards tell the alerts service: which alerts went with their tiles. */
export interface DashboardEvents {
  alertsDeleted(ids: string[]): void;
}

/**
 * Dashboards and their tiles. Tile ids are kept across updates; a tile dropped by an update, or a
 * deleted dashboard, takes its alerts with it (reference/alerts.md).
 */
export class DashboardsService {
  private events: DashboardEvents | undefined;

  constructor(
    private readonly store: Store,
    private readonly sources: SourcesService,
  ) {}

  onAlertsDeleted(events: DashboardEvents): void {
    this.events = events;
  }

  async list(scope: TeamScope, query: unknown): Promise<Page<DashboardRecord>> {
    const repo = this.store.repos.alerts;
    return listPage(
      query,
      (limit, offset) => repo.listDashboards(scope.teamId, limit, offset),
      () => repo.countDashboards(scope.teamId),
      toRecord,
    );
  }

  async get(scope: TeamScope, id: string): Promise<DashboardRecord> {
    return toRecord(await this.require(scope, id));
  }

  async require(scope: TeamScope, id: string): Promise<DashboardRow> {
    const row = isId(id) ? await this.store.repos.alerts.getDashboard(scope.teamId, id) : undefined;
    if (!row) throw new AreaNotFoundError('Dashboard');
    return row;
  }

  async create(scope: TeamScope, body: unknown): Promise<DashboardRecord> {
    const valid = await this.validate(scope, body);
    const now = new Date();
    const row: DashboardRow = {
      id: newId(),
      teamId: scope.teamId,
      name: valid.name,
      tags: valid.tags ?? [],
      tiles: withIds(valid.tiles ?? [], new Set()),
      createdAt: now,
      updatedAt: now,
    };
    await this.store.repos.alerts.putDashboard(row);
    return toRecord(row);
  }

  /** A full replace; tiles keep the ids they are sent with, and new tiles get new ones. */
  async replace(scope: TeamScope, id: string, body: unknown): Promise<DashboardRecord> {
    const valid = await this.validate(scope, body);
    const { row, deleted } = await this.store.transaction(async (repos) => {
      const existing = await repos.alerts.getDashboard(scope.teamId, isId(id) ? id : '');
      if (!existing) throw new AreaNotFoundError('Dashboard');
      const known = new Set(existing.tiles.map((tile) => String(tile.id)));
      const next: DashboardRow = {
        ...existing,
        name: valid.name,
        tags: valid.tags ?? [],
        tiles: withIds(valid.tiles ?? [], known),
        updatedAt: new Date(),
      };
      await repos.alerts.putDashboard(next);
      const kept = next.tiles.map((tile) => String(tile.id));
      return { row: next, deleted: await repos.alerts.deleteAlertsOfRemovedTiles(existing.id, kept) };
    });
    if (deleted.length) this.events?.alertsDeleted(deleted);
    return toRecord(row);
  }

  async delete(scope: TeamScope, id: string): Promise<void> {
    const deleted = await this.store.transaction(async (repos) => {
      const existing = await repos.alerts.getDashboard(scope.teamId, isId(id) ? id : '');
      if (!existing) throw new AreaNotFoundError('Dashboard');
      const alerts = await repos.alerts.alertIdsOfDashboard(existing.id);
      await repos.alerts.deleteDashboard(existing.id); // its alerts go by cascade
      return alerts;
    });
    if (deleted.length) this.events?.alertsDeleted(deleted);
  }

  private async validate(scope: TeamScope, body: unknown): Promise<DashboardBody> {
    const problems: Problem[] = checkBody(body);
    const tiles = (body as { tiles?: unknown } | undefined)?.tiles;
    if (problems.length === 0 && Array.isArray(tiles))
      problems.push(...(await this.tileProblems(scope, tiles)));
    if (problems.length) throw new ValidationError(problems);
    return body as DashboardBody;
  }

  /**
   * Every tile's source is one of the team's; quantiles name their level; tile ids are unique; then,
   * for a tile with no other problem, its expressions are read by the engine and run on the
   * source's table reading no rows (a mistake is a 400 now, not a history row at the next tick).
   */
  private async tileProblems(scope: TeamScope, tiles: TileConfig[]): Promise<Problem[]> {
    const problems: Problem[] = [];
    const seen = new Set<string>();
    for (const [index, tile] of tiles.entries()) {
      const at = `tiles[${index}]`;
      const before = problems.length;
      if (tile.id !== undefined) {
        if (seen.has(tile.id))
          problems.push({ path: `${at}.id`, message: `Tile id ${tile.id} is used twice` });
        seen.add(tile.id);
      }
      const source = isId(tile.config.sourceId)
        ? await this.store.repos.alerts.getSource(scope.teamId, tile.config.sourceId)
        : undefined;
      if (!source) problems.push({ path: `${at}.config.sourceId`, message: 'No such source in your team' });
      problems.push(...selectProblems(tile, at));
      if (source && problems.length === before)
        problems.push(...(await this.engineProblems(scope, source, tile, at)));
    }
    return problems;
  }

  /** Each SQL expression of a tile read by the engine as one expression, then run on the table. */
  private async engineProblems(
    scope: TeamScope,
    source: SourceRow,
    tile: TileConfig,
    at: string,
  ): Promise<Problem[]> {
    const expressions: [string, string | undefined][] = [[`${at}.config.groupBy`, tile.config.groupBy]];
    tile.config.select.forEach((item, i) => {
      expressions.push([`${at}.config.select[${i}].valueExpression`, item.valueExpression]);
      if (item.whereLanguage !== 'lucene') expressions.push([`${at}.config.select[${i}].where`, item.where]);
    });
    const problems: Problem[] = [];
    for (const [path, text] of expressions) {
      const problem = text?.trim() ? await this.sources.expressionProblem(scope, source, text) : undefined;
      if (problem) problems.push({ path, message: `Not usable: ${problem}` });
    }
    if (problems.length > 0) return problems;
    for (const [field, sql] of checkQueries(source, tile.config)) {
      const problem = await this.sources.checkProblem(scope, source.serviceId, sql);
      if (problem) problems.push({ path: `${at}.config.${field}`, message: problem });
    }
    return problems;
  }
}

/** What a tile's selects and group get wrong on their own, before any engine reads them. */
function selectProblems(tile: TileConfig, at: string): Problem[] {
  const problems: Problem[] = [];
  const groupBy = tile.config.groupBy ? fragmentProblem(tile.config.groupBy) : undefined;
  if (groupBy) problems.push({ path: `${at}.config.groupBy`, message: `Not usable: ${groupBy}` });
  tile.config.select.forEach((item, i) => {
    const path = `${at}.config.select[${i}]`;
    if (item.aggFn === 'quantile' && item.level === undefined) {
      problems.push({ path: `${path}.level`, message: 'Required for quantile: a number between 0 and 1' });
    }
    if (item.aggFn !== 'quantile' && item.level !== undefined) {
      problems.push({ path: `${path}.level`, message: 'Only used with aggFn quantile' });
    }
    const expressions: [string, string | undefined][] = [
      ['valueExpression', item.valueExpression],
      ['where', item.whereLanguage === 'lucene' ? undefined : item.where],
    ];
    for (const [field, text] of expressions) {
      const unusable = text ? fragmentProblem(text) : undefined;
      if (unusable) problems.push({ path: `${path}.${field}`, message: `Not usable: ${unusable}` });
    }
    if (item.whereLanguage === 'lucene' && item.where) {
      try {
        luceneToSql(item.where);
      } catch (error) {
        if (!(error instanceof LuceneError)) throw error;
        problems.push({
          path: `${path}.where`,
          message: `Not a filter this service reads: ${error.message}`,
        });
      }
    }
    if (item.aggFn !== 'count' && !item.valueExpression) {
      problems.push({ path: `${path}.valueExpression`, message: `Required for ${item.aggFn}` });
    }
  });
  return problems;
}

/** Tiles keep an id they bring when the dashboard already had it; others get a new one. */
function withIds(tiles: TileConfig[], known: Set<string>): Record<string, unknown>[] {
  return tiles.map((tile) => {
    const { id, ...rest } = tile;
    return { id: id !== undefined && (known.has(id) || isId(id)) ? id : newId(), ...rest };
  });
}

function toRecord(row: DashboardRow): DashboardRecord {
  return { id: row.id, name: row.name, tiles: row.tiles as DashboardRecord['tiles'], tags: row.tags };
}
