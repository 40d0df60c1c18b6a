import { EngineError, type EngineRegistry } from '../../engine/index.js';
import { CodedError } from '../../errors.js';
import type { IdentityService } from '../../identity/index.js';
import type { TeamScope } from '../context.js';
import type { SourcesService } from '../sources-service.js';
import { scanQuery, TILE_QUERY_SETTINGS, type TileSelect, tileQuery } from './tile-query.js';

/** A tile as a dashboard stores it (src/alerts/tile-series.ts): what its query needs. */
export interface QueriedTile {
  config: { sourceId: string; select: TileSelect[]; groupBy?: string };
}

/** Values by bucket start (epoch ms), then by group (null without a group-by). */
export type Buckets = Map<number, Map<string | null, number>>;

export interface TileRunDeps {
  engines: EngineRegistry;
  identity: IdentityService;
  /** The team's sources, built-in ones included (a service's pipe history). */
  sources: Pick<SourcesService, 'find'>;
  /** Longest a tile query may run in the engine. */
  queryTimeoutMs: number;
}

/**
 * Runs one select of a tile over `[start, end)` in buckets of `intervalSeconds`, read-only on the
 * team's own service with the query timeout: the one way a tile is read, by the alert evaluator
 * (src/alerts/evaluation/evaluator.ts) and by the tile data the console draws
 * (src/alerts/tile-data.ts), so a chart shows what an alert on the tile decides on.
 */
export async function runTileQuery(
  deps: TileRunDeps,
  scope: TeamScope,
  tile: QueriedTile | undefined,
  range: { start: Date; end: Date; intervalSeconds: number },
  selectIndex = 0,
  /** At most this many result rows (buckets times groups): more is the engine's TOO_MANY_ROWS_OR_BYTES. */
  maxRows?: number,
): Promise<Buckets> {
  if (!tile) throw new CodedError('SLUICE_ERR_ALERT_TILE_GONE', 'the tile is no longer on its dashboard');
  const source = await sourceOf(deps, scope, tile.config.sourceId);
  const select = tile.config.select[selectIndex] as TileSelect;
  const sql = tileQuery(source, select, tile.config.groupBy || undefined, range);
  const rows = await query(deps, scope, source, sql, maxRows);
  const buckets: Buckets = new Map();
  for (const row of rows) addValue(buckets, row, 'value');
  return buckets;
}

/**
 * Several tiles' selects on one source, with the same grouping, over the same range, in one read
 * of the table (tile-query.ts, scanQuery): the evaluator's way to check the alerts of many tiles
 * at the cost of one query. Each select's buckets come back in its place, as runTileQuery would
 * give them.
 */
export async function runTileScan(
  deps: TileRunDeps,
  scope: TeamScope,
  scan: { sourceId: string; groupBy: string | undefined; selects: TileSelect[] },
  range: { start: Date; end: Date; intervalSeconds: number },
): Promise<Buckets[]> {
  const source = await sourceOf(deps, scope, scan.sourceId);
  const rows = await query(deps, scope, source, scanQuery(source, scan.selects, scan.groupBy, range));
  const all = scan.selects.map((): Buckets => new Map());
  for (const row of rows) {
    for (const [i, buckets] of all.entries()) addValue(buckets, row, `value${i}`);
  }
  return all;
}

async function sourceOf(deps: TileRunDeps, scope: TeamScope, sourceId: string) {
  const source = await deps.sources.find(scope, sourceId);
  if (!source)
    throw new CodedError('SLUICE_ERR_ALERT_SOURCE_NOT_FOUND', 'the source of the tile no longer exists');
  return source;
}

async function query(
  deps: TileRunDeps,
  scope: TeamScope,
  source: { serviceId: string },
  sql: string,
  maxRows?: number,
) {
  const service = await deps.identity.getService(scope.organizationId, source.serviceId);
  try {
    const result = await deps.engines.engineFor(service).query(sql, {
      readonly: true,
      timeoutMs: deps.queryTimeoutMs,
      settings: {
        ...TILE_QUERY_SETTINGS,
        ...(maxRows === undefined ? {} : { max_result_rows: maxRows, result_overflow_mode: 'throw' }),
      },
    });
    return result.rows;
  } catch (error) {
    // A column the tile names is gone or changed: for a pipe the engine's condition says its
    // destination no longer fits; for a tile it is its definition that no longer fits the table.
    if (error instanceof EngineError && error.condition === 'SLUICE_ERR_DESTINATION_MISMATCH')
      throw new EngineError(error.message, error.code, 'SLUICE_ERR_ENGINE_DEFINITION');
    throw error;
  }
}

/** A row's value in its bucket and group; a NULL value (no row met the select's filter) is none. */
function addValue(buckets: Buckets, row: Record<string, unknown>, column: string): void {
  const value = row[column];
  if (value === null || value === undefined) return;
  const at = Number(row.bucket) * 1000;
  const values = buckets.get(at) ?? new Map<string | null, number>();
  values.set(row.group === undefined ? null : String(row.group), Number(value));
  buckets.set(at, values);
}
