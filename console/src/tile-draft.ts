import type { AlertSource, Dashboard, Tile, TileSelect } from './alerts-model.js';

/**
 * What the tile form holds: the API's tile config with its first select as fields (README,
 * "Alerts area": dashboards). A tile read from a dashboard keeps what the form has no field for
 * (its id, place, first select's alias and further selects), so saving it changes only the fields.
 */
export interface TileDraft {
  name: string;
  displayType: string;
  sourceId: string;
  aggFn: string;
  level: string;
  valueExpression: string;
  where: string;
  whereLanguage: 'sql' | 'lucene';
  groupBy: string;
  id?: string;
  place?: Place;
  alias?: string;
  moreSelects?: TileSelect[];
}

export interface Place {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** A new tile's place: the grid's top left. */
const FIRST_PLACE: Place = { x: 0, y: 0, w: 6, h: 4 };

export function emptyTile(sources: AlertSource[]): TileDraft {
  return {
    name: '',
    displayType: 'line',
    sourceId: sources[0]?.id ?? '',
    aggFn: 'count',
    level: '0.95',
    valueExpression: '',
    where: '',
    whereLanguage: 'lucene',
    groupBy: '',
  };
}

/** A new tile of a dashboard, placed below its others. */
export function tileBelow(dashboard: Dashboard, sources: AlertSource[]): TileDraft {
  const bottom = Math.max(0, ...dashboard.tiles.map((t) => t.y + t.h));
  return { ...emptyTile(sources), place: { ...FIRST_PLACE, y: bottom } };
}

/** A tile as sent: its config with the form's select first, at its place (new: the top left). */
export function tileBody(draft: TileDraft) {
  return {
    ...(draft.id ? { id: draft.id } : {}),
    name: draft.name,
    ...(draft.place ?? FIRST_PLACE),
    config: {
      displayType: draft.displayType,
      sourceId: draft.sourceId,
      select: [
        {
          aggFn: draft.aggFn,
          ...(draft.aggFn === 'quantile' ? { level: Number(draft.level) } : {}),
          ...(draft.aggFn !== 'count' || draft.valueExpression
            ? { valueExpression: draft.valueExpression }
            : {}),
          ...(draft.where.trim() ? { where: draft.where, whereLanguage: draft.whereLanguage } : {}),
          ...(draft.alias ? { alias: draft.alias } : {}),
        },
        ...(draft.moreSelects ?? []),
      ],
      ...(draft.groupBy.trim() ? { groupBy: draft.groupBy } : {}),
    },
  };
}

/**
 * The inverse of tileBody: a dashboard's tile as the form's draft, whichever form the API answered
 * it in (`config`, or `series`, which the server reads as a config in the same way). Saved, it is
 * sent as a config.
 */
export function draftOf(tile: Tile): TileDraft {
  const config = tile.config ?? configOfSeries(tile.series ?? []);
  const [first, ...moreSelects] = config.select;
  return {
    name: tile.name,
    displayType: config.displayType,
    sourceId: config.sourceId,
    aggFn: first?.aggFn ?? 'count',
    level: first?.level === undefined ? '0.95' : String(first.level),
    valueExpression: first?.valueExpression ?? '',
    where: first?.where ?? '',
    // A filter sent without its language is SQL to the server; with no filter, the form's default.
    whereLanguage: first?.whereLanguage ?? (first?.where ? 'sql' : 'lucene'),
    groupBy: config.groupBy ?? '',
    id: tile.id,
    place: { x: tile.x, y: tile.y, w: tile.w, h: tile.h },
    ...(first?.alias ? { alias: first.alias } : {}),
    ...(moreSelects.length ? { moreSelects } : {}),
  };
}

/** The config the server reads series as (src/alerts/tile-series.ts, asConfigTile). */
function configOfSeries(series: NonNullable<Tile['series']>): NonNullable<Tile['config']> {
  const first = series[0];
  const displayType = first?.type === 'time' ? (first.displayType ?? 'line') : (first?.type ?? 'line');
  const groupBy = first?.type === 'number' ? undefined : first?.groupBy?.[0]?.trim();
  return {
    displayType: displayType as NonNullable<Tile['config']>['displayType'],
    sourceId: first?.sourceId ?? '',
    select: series.map((s) => ({
      aggFn: s.aggFn,
      ...(s.level === undefined ? {} : { level: s.level }),
      ...(s.field?.trim() ? { valueExpression: s.field } : {}),
      where: s.where ?? '',
      whereLanguage: s.whereLanguage ?? 'lucene',
      ...(s.alias ? { alias: s.alias } : {}),
    })),
    ...(groupBy ? { groupBy } : {}),
  };
}
