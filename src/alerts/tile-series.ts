import type { Problem } from '../errors.js';
import type { SeriesItem, TileBody, TileConfig } from './schemas.js';

/**
 * What a tile sent as `series` keeps beside its config: that it was sent so (it is answered so),
 * and the presentation the config has no place for.
 */
export interface SeriesForm {
  numberFormat?: Record<string, unknown>;
  sortOrder?: 'asc' | 'desc';
}

/** A tile as stored: always its config (what is checked and evaluated), and how it was sent. */
export type StoredTile = TileConfig & { seriesForm?: SeriesForm };

type Select = TileConfig['config']['select'][number];

/**
 * A tile in either of its forms as its config. `series` (the original API's form before `config`,
 * README "Alerts area") become one select each, as that API translated them: the first series
 * names the type, source and group; `field` is the aggregated expression; a filter is Lucene unless
 * said otherwise. Whatever cannot be said in a config is a problem naming the field.
 */
export function asConfigTile(tile: TileBody, at: string): { tile?: StoredTile; problems: Problem[] } {
  const { id, name, x, y, w, h } = tile;
  const place = { ...(id === undefined ? {} : { id }), name, x, y, w, h };
  if (tile.config && tile.series) {
    return { problems: [{ path: at, message: 'Give config or series (its earlier form), not both' }] };
  }
  if (tile.config) return { tile: { ...place, config: tile.config }, problems: [] };
  if (!tile.series) {
    return {
      problems: [{ path: `${at}.config`, message: 'Required (or series, the earlier form of a tile)' }],
    };
  }
  const problems = seriesProblems(tile.series, tile.asRatio, at);
  if (problems.length > 0) return { problems };
  const first = tile.series[0] as SeriesItem;
  const groupBy = first.type === 'number' ? undefined : first.groupBy?.[0]?.trim() || undefined;
  const numberFormat = tile.series.find((series) => series.numberFormat)?.numberFormat;
  const seriesForm: SeriesForm = {
    ...(numberFormat ? { numberFormat } : {}),
    ...(first.type === 'table' && first.sortOrder ? { sortOrder: first.sortOrder } : {}),
  };
  const displayType = first.type === 'time' ? (first.displayType ?? 'line') : first.type;
  const config = {
    displayType,
    sourceId: first.sourceId,
    select: tile.series.map(toSelect),
    ...(groupBy ? { groupBy } : {}),
  };
  return { tile: { ...place, config, seriesForm }, problems: [] };
}

function toSelect(series: SeriesItem): Select {
  return {
    aggFn: series.aggFn,
    ...(series.level === undefined ? {} : { level: series.level }),
    ...(series.field?.trim() ? { valueExpression: series.field } : {}),
    where: series.where,
    whereLanguage: series.whereLanguage ?? 'lucene',
    ...(series.alias ? { alias: series.alias } : {}),
  };
}

/** What series say that one tile's config cannot: each series of a tile is drawn alike. */
function seriesProblems(series: SeriesItem[], asRatio: boolean | undefined, at: string): Problem[] {
  const problems: Problem[] = [];
  if (asRatio) {
    problems.push({
      path: `${at}.asRatio`,
      message: 'A ratio of two series is not supported: leave it out or false',
    });
  }
  series.forEach((item, i) => {
    // A metric series reads the metric's own table, filtered by name: not a tile of this service.
    for (const field of ['metricName', 'metricDataType'] as const) {
      if ((item as Record<string, unknown>)[field] !== undefined)
        problems.push({
          path: `${at}.series[${i}].${field}`,
          message: "Not supported: make a source over the metric's table and filter on its name in where",
        });
    }
  });
  const first = series[0] as SeriesItem;
  const groupOf = (item: SeriesItem) => JSON.stringify(item.groupBy ?? []);
  if ((first.groupBy?.length ?? 0) > 1) {
    problems.push({ path: `${at}.series[0].groupBy`, message: 'Give at most one expression to group by' });
  }
  series.forEach((item, i) => {
    if (i === 0) return;
    const path = `${at}.series[${i}]`;
    if (item.type !== first.type)
      problems.push({ path: `${path}.type`, message: `Must be ${first.type}, as every series of the tile` });
    if (item.sourceId !== first.sourceId)
      problems.push({
        path: `${path}.sourceId`,
        message: 'Must be the source of the first series of the tile',
      });
    if (first.type !== 'number' && groupOf(item) !== groupOf(first))
      problems.push({
        path: `${path}.groupBy`,
        message: 'Must be the group of the first series of the tile',
      });
    if (first.type === 'time' && (item.displayType ?? 'line') !== (first.displayType ?? 'line'))
      problems.push({ path: `${path}.displayType`, message: 'Must be the display of the first series' });
  });
  return problems;
}

/**
 * A stored tile as the form it was sent in: series tiles as the original API answered them
 * (`asRatio`, each select a series with its `field`, `where`, `whereLanguage` and the tile's
 * group), config tiles as they are.
 */
export function tileRecord(tile: StoredTile & { id: string }): Record<string, unknown> {
  const { id, name, x, y, w, h, config, seriesForm } = tile;
  if (!seriesForm) return { id, name, x, y, w, h, config };
  const type =
    config.displayType === 'table' || config.displayType === 'number' ? config.displayType : 'time';
  const series = config.select.map((select) => ({
    type,
    sourceId: config.sourceId,
    aggFn: select.aggFn,
    ...(select.alias ? { alias: select.alias } : {}),
    ...(select.level === undefined ? {} : { level: select.level }),
    field: select.valueExpression ?? '',
    where: select.where ?? '',
    whereLanguage: select.whereLanguage ?? 'sql',
    ...(type === 'number' ? {} : { groupBy: config.groupBy ? [config.groupBy] : [] }),
    ...(type === 'time' ? { displayType: config.displayType } : {}),
    ...(type === 'table' ? { sortOrder: seriesForm.sortOrder ?? 'asc' } : {}),
    ...(seriesForm.numberFormat ? { numberFormat: seriesForm.numberFormat } : {}),
  }));
  return { id, name, x, y, w, h, asRatio: false, series };
}

/**
 * A problem found in a series tile's config, named as the client wrote it: `config.select[1].where`
 * is `series[1].where`, the value expression is `field`, the source and group the first series'.
 */
export function inSentTerms(problem: Problem, tiles: StoredTile[]): Problem {
  const match = /^tiles\[(\d+)\]\.config(?:\.(.*))?$/.exec(problem.path);
  if (!match || !tiles[Number(match[1])]?.seriesForm) return problem;
  const at = `tiles[${match[1]}]`;
  const rest = match[2] ?? '';
  const select = /^select\[(\d+)\](?:\.(.*))?$/.exec(rest);
  let path = `${at}.series[0]`;
  if (select) {
    const field = select[2] === 'valueExpression' ? 'field' : select[2];
    path = `${at}.series[${select[1]}]${field ? `.${field}` : ''}`;
  } else if (rest === 'groupBy') path = `${at}.series[0].groupBy[0]`;
  else if (rest === 'displayType') path = `${at}.series[0].type`;
  else if (rest) path = `${at}.series[0].${rest}`;
  return { ...problem, path };
}
