import { ENGINE_CODES, EngineError } from '../engine/index.js';
import { BadRequestError, CodedError, type Problem, SluiceError, ValidationError } from '../errors.js';
import { AreaNotFoundError, type TeamScope } from './context.js';
import type { DashboardsService } from './dashboards-service.js';
import type { TileSelect } from './evaluation/tile-query.js';
import { type Buckets, type QueriedTile, runTileQuery, type TileRunDeps } from './evaluation/tile-run.js';
import { intervalMs } from './evaluation/windows.js';
import { INTERVALS } from './schemas.js';

/** The bucket sizes a tile is read in: those of alerts, so any alert's windows can be drawn. */
export const GRANULARITIES = INTERVALS;
/** Without a granularity, the finest that gives at most this many buckets. */
const DEFAULT_BUCKETS = 300;
/** More buckets than this is refused: the chart could not show them and the query reads too much. */
export const MAX_BUCKETS = 2000;
/** Groups drawn per select, the largest first; the rest are left out and `truncated` says so. */
const MAX_GROUPS = 20;
/** Result rows a tile data request reads at most (buckets times groups): a bound on what the server holds. */
const MAX_ROWS = 100_000;
const DEFAULT_RANGE_MS = 3_600_000;

export interface TilePoint {
  t: string;
  value: number;
}

export interface TileSeries {
  /** Which select of the tile (0 is the one alerts evaluate). */
  select: number;
  label: string;
  group?: string;
  points: TilePoint[];
}

export interface TileData {
  from: string;
  to: string;
  granularity: string;
  series: TileSeries[];
  truncated: boolean;
}

interface Range {
  start: Date;
  end: Date;
  granularity: string;
}

/**
 * A tile's series over a time range (README, "Alerts area": tile data), read with the query the
 * alert evaluator runs (src/alerts/evaluation/tile-run.ts): each bucket's value is what an alert on
 * the tile with that interval reads for that window, an empty bucket 0 as there.
 */
export class TileDataService {
  constructor(
    private readonly deps: TileRunDeps & {
      dashboards: Pick<DashboardsService, 'require'>;
      clock: () => Date;
    },
  ) {}

  async read(scope: TeamScope, dashboardId: string, tileId: string, query: unknown): Promise<TileData> {
    const dashboard = await this.deps.dashboards.require(scope, dashboardId);
    const tile = dashboard.tiles.find((t) => t.id === tileId) as QueriedTile | undefined;
    if (!tile) throw new AreaNotFoundError('Tile');
    const range = rangeOf(query, this.deps.clock());
    const intervalSeconds = intervalMs(range.granularity) / 1000;
    const selects = tile.config.select;
    const read = await Promise.all(
      selects.map((_, i) => runTileQuery(this.deps, scope, tile, { ...range, intervalSeconds }, i, MAX_ROWS)),
    ).catch((error: unknown) => {
      throw asTileDataError(error);
    });
    const starts = bucketStarts(range);
    let truncated = false;
    const series = read.flatMap((buckets, i) => {
      const groups = groupsOf(buckets, tile.config.groupBy !== undefined && tile.config.groupBy !== '');
      truncated ||= groups.length > MAX_GROUPS;
      return groups.slice(0, MAX_GROUPS).map((group) => ({
        select: i,
        label: labelOf(selects[i] as TileSelect & { alias?: string }, group),
        ...(group === null ? {} : { group }),
        points: starts.map((at) => ({
          t: new Date(at).toISOString(),
          // An empty bucket counts as 0, as the evaluator reads it (src/alerts/evaluation/evaluator.ts).
          value: buckets.get(at)?.get(group) ?? 0,
        })),
      }));
    });
    return {
      from: range.start.toISOString(),
      to: range.end.toISOString(),
      granularity: range.granularity,
      series,
      truncated,
    };
  }
}

/**
 * `from` and `to` (ISO times; the last hour up to now by default) widened to whole buckets of the
 * granularity, aligned to the epoch as alert windows are; the granularity given, or the finest
 * with at most 300 buckets. Each problem names its query field.
 */
export function rangeOf(query: unknown, now: Date): Range {
  const q = (query ?? {}) as Record<string, unknown>;
  const problems: Problem[] = [];
  const time = (name: 'from' | 'to', fallback: number) => {
    const raw = q[name];
    if (raw === undefined) return fallback;
    const at = typeof raw === 'string' && raw.trim() !== '' ? Date.parse(raw) : Number.NaN;
    if (Number.isNaN(at)) problems.push({ path: name, message: 'Expected an ISO 8601 time' });
    return at;
  };
  const end = time('to', now.getTime());
  const start = time('from', end - DEFAULT_RANGE_MS);
  if (problems.length === 0 && start >= end) problems.push({ path: 'to', message: 'Must be after from' });
  const granularity = q.granularity;
  if (granularity !== undefined && !(GRANULARITIES as readonly unknown[]).includes(granularity)) {
    problems.push({ path: 'granularity', message: `Expected one of ${GRANULARITIES.join(', ')}` });
  }
  if (problems.length) throw new ValidationError(problems, 'Query');
  const chosen =
    (granularity as string | undefined) ??
    GRANULARITIES.find((g) => bucketCount(start, end, g) <= DEFAULT_BUCKETS) ??
    (GRANULARITIES[GRANULARITIES.length - 1] as string);
  const buckets = bucketCount(start, end, chosen);
  if (buckets > MAX_BUCKETS) {
    const message = `${chosen} makes ${buckets} buckets of this range, over ${MAX_BUCKETS}: choose a coarser granularity or a shorter range`;
    throw new ValidationError([{ path: 'granularity', message }], 'Query');
  }
  const size = intervalMs(chosen);
  return {
    start: new Date(Math.floor(start / size) * size),
    end: new Date(Math.ceil(end / size) * size),
    granularity: chosen,
  };
}

function bucketCount(start: number, end: number, granularity: string): number {
  const size = intervalMs(granularity);
  return Math.ceil(end / size) - Math.floor(start / size);
}

function bucketStarts(range: Range): number[] {
  const size = intervalMs(range.granularity);
  const starts: number[] = [];
  for (let at = range.start.getTime(); at < range.end.getTime(); at += size) starts.push(at);
  return starts;
}

/** The groups read, the largest in total first; one null group without a group-by. */
function groupsOf(buckets: Buckets, grouped: boolean): (string | null)[] {
  if (!grouped) return [null];
  const totals = new Map<string, number>();
  for (const values of buckets.values()) {
    for (const [group, value] of values) {
      if (group !== null) totals.set(group, (totals.get(group) ?? 0) + Math.abs(value));
    }
  }
  return [...totals.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([g]) => g);
}

function labelOf(select: TileSelect & { alias?: string }, group: string | null): string {
  const name = select.alias || `${select.aggFn}(${select.valueExpression ?? ''})`;
  return group === null ? name : `${name} ${group}`;
}

/**
 * What a tile's query met, as a 400 with its condition's code: too many rows (a group-by of too
 * many groups over the range), the engine refusing the tile's expressions, or its source gone.
 * Anything else stays an unexpected error.
 */
function asTileDataError(error: unknown): unknown {
  if (error instanceof EngineError && error.code === ENGINE_CODES.TOO_MANY_ROWS_OR_BYTES) {
    return new BadRequestError(
      'SLUICE_ERR_VALIDATION',
      `the tile reads more than ${MAX_ROWS} buckets and groups over this range: choose a shorter range, a coarser granularity or a group-by of fewer groups`,
      { cause: error },
    );
  }
  if (error instanceof EngineError && error.code !== undefined) {
    return new BadRequestError(error.condition, `the tile's query does not run: ${error.message}`, {
      cause: error,
    });
  }
  if (error instanceof SluiceError) return error;
  if (error instanceof CodedError) return new BadRequestError(error.code, error.message, { cause: error });
  return error;
}
