import { fragmentProblem } from '../engine/index.js';
import { type Problem, ValidationError } from '../errors.js';
import { checker } from '../schema/index.js';
import type { DashboardRow, SourceRow, Store } from '../store/index.js';
import { AreaNotFoundError, listPage, type Page, type TeamScope } from './context.js';
import { checkQueries } from './evaluation/index.js';
import { isId, isObjectId, newId } from './ids.js';
import { LuceneError, luceneToSql } from './lucene.js';
import { DashboardBody, type DashboardRecord, type TileConfig } from './schemas.js';
import type { SourcesService } from './sources-service.js';
import { asConfigTile, inSentTerms, type StoredTile, tileRecord } from './tile-series.js';

const checkBody = checker(DashboardBody);

/** What dashboards tell the alerts service: which alerts went with their tiles. */
export interface DashboardEvents {
  alertsDeleted(ids: string[]): void;
}

/** A dashboard body once checked: tiles as configs, tags without repeats. */
interface ValidDashboard {
  name: string;
  tags: string[];
  tiles: StoredTile[];
}

/**
 * Dashboards and their tiles. Tile ids are kept across updates; a tile dropped by an update, or a
 * deleted dashboard, takes its alerts with it (README "Alerts area"). A tile comes as `config` or
 * as `series` (the original API's earlier form); it is stored as config and answered in its form.
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
    requireObjectId(id);
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
      tags: valid.tags,
      tiles: withIds(valid.tiles, new Set()),
      createdAt: now,
      updatedAt: now,
    };
    await this.store.repos.alerts.putDashboard(row);
    return toRecord(row);
  }

  /** A full replace; tiles keep the ids they are sent with, and new tiles get new ones. */
  async replace(scope: TeamScope, id: string, body: unknown): Promise<DashboardRecord> {
    requireObjectId(id);
    const valid = await this.validate(scope, body);
    const { row, deleted } = await this.store.transaction(async (repos) => {
      const existing = await repos.alerts.getDashboard(scope.teamId, isId(id) ? id : '');
      if (!existing) throw new AreaNotFoundError('Dashboard');
      const known = new Set(existing.tiles.map((tile) => String(tile.id)));
      const next: DashboardRow = {
        ...existing,
        name: valid.name,
        tags: valid.tags,
        tiles: withIds(valid.tiles, known),
        updatedAt: new Date(),
      };
      await repos.alerts.putDashboard(next);
      const kept = next.tiles.map((tile) => String(tile.id));
      return { row: next, deleted: await repos.alerts.deleteAlertsOfRemovedTiles(existing.id, kept) };
    });
    if (deleted.length) this.events?.alertsDeleted(deleted);
    return toRecord(row);
  }

  /**
   * Idempotent, as the original API: a dashboard already gone (or never the team's, which answers
   * the same so ids of other teams are not revealed) is a 200 that deletes nothing.
   */
  async delete(scope: TeamScope, id: string): Promise<void> {
    requireObjectId(id);
    const deleted = await this.store.transaction(async (repos) => {
      const existing = await repos.alerts.getDashboard(scope.teamId, isId(id) ? id : '');
      if (!existing) return [];
      const alerts = await repos.alerts.alertIdsOfDashboard(existing.id);
      await repos.alerts.deleteDashboard(existing.id); // its alerts go by cascade
      return alerts;
    });
    if (deleted.length) this.events?.alertsDeleted(deleted);
  }

  /** The body checked, its tiles as configs; repeated tags are dropped, as the original did. */
  private async validate(scope: TeamScope, body: unknown): Promise<ValidDashboard> {
    const problems: Problem[] = checkBody(body);
    if (problems.length) throw new ValidationError(problems);
    const valid = body as DashboardBody;
    const tiles: StoredTile[] = [];
    for (const [index, tile] of (valid.tiles ?? []).entries()) {
      const converted = asConfigTile(tile, `tiles[${index}]`);
      problems.push(...converted.problems);
      if (converted.tile) tiles.push(converted.tile);
    }
    if (problems.length === 0) {
      const found = await this.tileProblems(scope, tiles);
      problems.push(...found.map((problem) => inSentTerms(problem, tiles)));
    }
    if (problems.length) throw new ValidationError(problems);
    return { name: valid.name, tags: [...new Set(valid.tags ?? [])], tiles };
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
      const source = await this.sources.find(scope, tile.config.sourceId);
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
function withIds(tiles: StoredTile[], known: Set<string>): Record<string, unknown>[] {
  return tiles.map((tile) => {
    const { id, ...rest } = tile;
    return { id: id !== undefined && (known.has(id) || isId(id)) ? id : newId(), ...rest };
  });
}

function toRecord(row: DashboardRow): DashboardRecord {
  const tiles = (row.tiles as (StoredTile & { id: string })[]).map(tileRecord);
  return { id: row.id, name: row.name, tiles: tiles as DashboardRecord['tiles'], tags: row.tags };
}

/** A path id the original's routes would not take as an id (not an ObjectId) is a 400, not a 404. */
function requireObjectId(id: string): void {
  if (!isObjectId(id))
    throw new ValidationError(
      [{ path: 'id', message: 'Invalid id: expected 24 hexadecimal characters' }],
      'Params',
    );
}
