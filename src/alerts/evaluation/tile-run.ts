import type { EngineRegistry } from '../../engine/index.js';
import { CodedError } from '../../errors.js';
import type { IdentityService } from '../../identity/index.js';
import type { TeamScope } from '../context.js';
import type { SourcesService } from '../sources-service.js';
import { TILE_QUERY_SETTINGS, type TileSelect, tileQuery } from './tile-query.js';

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
  const source = await deps.sources.find(scope, tile.config.sourceId);
  if (!source)
    throw new CodedError('SLUICE_ERR_ALERT_SOURCE_NOT_FOUND', 'the source of the tile no longer exists');
  const service = await deps.identity.getService(scope.organizationId, source.serviceId);
  const select = tile.config.select[selectIndex] as TileSelect;
  const sql = tileQuery(source, select, tile.config.groupBy || undefined, range);
  const result = await deps.engines.engineFor(service).query(sql, {
    readonly: true,
    timeoutMs: deps.queryTimeoutMs,
    settings: {
      ...TILE_QUERY_SETTINGS,
      ...(maxRows === undefined ? {} : { max_result_rows: maxRows, result_overflow_mode: 'throw' }),
    },
  });
  const buckets: Buckets = new Map();
  for (const row of result.rows) {
    const at = Number(row.bucket) * 1000;
    const values = buckets.get(at) ?? new Map<string | null, number>();
    values.set(row.group === undefined ? null : String(row.group), Number(row.value));
    buckets.set(at, values);
  }
  return buckets;
}
