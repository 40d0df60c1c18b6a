import { type Static, Type as T } from '@sinclair/typebox';
import { LIMITS, StringEnum } from '../schema/index.js';

/** README, "Alerts area": the intervals an alert is checked at. */
export const INTERVALS = ['1m', '5m', '15m', '30m', '1h', '6h', '12h', '1d'] as const;
/** `above` and `below` of the original, and the extensions this service adds. */
export const THRESHOLD_TYPES = [
  'above',
  'below',
  'above_exclusive',
  'below_or_equal',
  'equal',
  'not_equal',
  'between',
  'not_between',
] as const;
export const RANGE_TYPES = ['between', 'not_between'];
export const ALERT_SOURCES = ['tile', 'saved_search'] as const;
export const ALERT_STATES = ['OK', 'ALERT'] as const;
export const SOURCE_KINDS = ['log', 'trace', 'metric'] as const;
export const DISPLAY_TYPES = ['line', 'stacked_bar', 'number', 'table'] as const;
export const AGG_FNS = ['count', 'sum', 'avg', 'min', 'max', 'count_distinct', 'quantile'] as const;

const Id = T.String({ pattern: '^[0-9a-f]{24}$', description: 'a 24-character hexadecimal id' });
const Nullable = <S extends Parameters<typeof T.Union>[0][number]>(schema: S) => T.Union([schema, T.Null()]);

/** Create and update (a full replace) of an alert; unknown fields are ignored, as the original does. */
export const AlertBody = T.Object({
  name: T.Optional(Nullable(T.String({ minLength: 1, maxLength: 512 }))),
  message: T.Optional(Nullable(T.String({ minLength: 1, maxLength: 4096 }))),
  // At least 0, as the original's alert schema (`z.number().min(0)`) of the API's era.
  threshold: T.Number({ minimum: 0 }),
  thresholdMax: T.Optional(T.Number({ description: 'between and not_between only; at least threshold' })),
  interval: StringEnum(INTERVALS),
  thresholdType: StringEnum(THRESHOLD_TYPES),
  source: StringEnum(ALERT_SOURCES),
  dashboardId: T.String({ minLength: 1 }),
  tileId: T.String({ minLength: 1 }),
  channel: T.Object({ type: StringEnum(['webhook'] as const), webhookId: T.String({ minLength: 1 }) }),
  silenced: T.Optional(Nullable(T.Object({ until: T.String({ format: 'date-time' }) }))),
});
export type AlertBody = Static<typeof AlertBody>;

/** The alert record of the platform's API (README, "Alerts area"), extensions only when set. */
export const AlertRecord = T.Object({
  id: T.String(),
  name: Nullable(T.String()),
  message: Nullable(T.String()),
  threshold: T.Number(),
  thresholdMax: T.Optional(T.Number()),
  interval: T.String(),
  thresholdType: T.String(),
  source: T.String(),
  state: T.String(),
  channel: T.Object({ type: T.String(), webhookId: T.String() }),
  team: T.String(),
  tileId: T.String(),
  dashboard: T.String(),
  silenced: T.Optional(T.Object({ by: T.String(), at: T.String(), until: T.String() })),
  createdAt: T.String(),
  updatedAt: T.String(),
});
export type AlertRecord = Static<typeof AlertRecord>;

export const WebhookBody = T.Object({
  name: T.String({ minLength: 1, maxLength: 255 }),
  url: T.String({ minLength: 1, maxLength: 2048 }),
  description: T.Optional(Nullable(T.String({ maxLength: 4096 }))),
  headers: T.Optional(
    T.Record(T.String(), T.String(), { description: 'Write-only: stored encrypted, never returned' }),
  ),
  queryParams: T.Optional(
    T.Record(T.String(), T.String(), { description: 'Write-only: stored encrypted, never returned' }),
  ),
  body: T.Optional(
    Nullable(T.String({ maxLength: 65536, description: 'Template of the notification body' })),
  ),
});
export type WebhookBody = Static<typeof WebhookBody>;

export const WebhookRecord = T.Object({
  id: T.String(),
  name: T.String(),
  url: T.String(),
  description: Nullable(T.String()),
  body: Nullable(T.String()),
  createdAt: T.String(),
  updatedAt: T.String(),
});
export type WebhookRecord = Static<typeof WebhookRecord>;

export const SourceBody = T.Object({
  name: T.String({ minLength: 1, maxLength: 255 }),
  kind: StringEnum(SOURCE_KINDS),
  serviceId: T.String({ minLength: 1, maxLength: LIMITS.name }),
  from: T.Object({
    databaseName: T.String({ minLength: 1, maxLength: LIMITS.name }),
    tableName: T.String({ minLength: 1, maxLength: LIMITS.name }),
  }),
  timestampValueExpression: T.String({ minLength: 1, maxLength: LIMITS.expression }),
});
export type SourceBody = Static<typeof SourceBody>;

export const SourceRecord = T.Object({
  id: T.String(),
  name: T.String(),
  kind: T.String(),
  serviceId: T.String(),
  from: T.Object({ databaseName: T.String(), tableName: T.String() }),
  timestampValueExpression: T.String(),
});
export type SourceRecord = Static<typeof SourceRecord>;

export const SelectItem = T.Object({
  aggFn: StringEnum(AGG_FNS),
  level: T.Optional(T.Number({ exclusiveMinimum: 0, exclusiveMaximum: 1, description: 'quantile only' })),
  valueExpression: T.Optional(T.String({ maxLength: LIMITS.expression })),
  where: T.Optional(T.String({ maxLength: LIMITS.expression })),
  whereLanguage: T.Optional(StringEnum(['sql', 'lucene'] as const)),
  alias: T.Optional(T.String({ maxLength: LIMITS.name })),
});

const TileConfigBody = T.Object({
  displayType: StringEnum(DISPLAY_TYPES),
  sourceId: T.String({ minLength: 1 }),
  select: T.Array(SelectItem, { minItems: 1, maxItems: LIMITS.selectsPerTile }),
  groupBy: T.Optional(T.String({ maxLength: LIMITS.expression })),
});

/** Where a tile sits on the dashboard's grid. */
const TilePlace = {
  id: T.Optional(T.String({ minLength: 1 })),
  name: T.String({ maxLength: 1024 }),
  x: T.Integer({ minimum: 0 }),
  y: T.Integer({ minimum: 0 }),
  w: T.Integer({ minimum: 1 }),
  h: T.Integer({ minimum: 1 }),
};

/** The series kinds a tile of this service draws (the original also had search and markdown). */
export const SERIES_TYPES = ['time', 'table', 'number'] as const;

/**
 * One series of a tile in the earlier form of the original's API (its `series` tiles, before
 * `config`): what it reads and how. Each becomes one select of the tile's config.
 */
export const SeriesItem = T.Object({
  type: StringEnum(SERIES_TYPES),
  sourceId: T.String({ minLength: 1 }),
  aggFn: StringEnum(AGG_FNS),
  level: T.Optional(T.Number({ exclusiveMinimum: 0, exclusiveMaximum: 1, description: 'quantile only' })),
  field: T.Optional(T.String({ maxLength: LIMITS.expression, description: 'the aggregated expression' })),
  alias: T.Optional(T.String({ maxLength: LIMITS.name })),
  where: T.String({ maxLength: LIMITS.expression }),
  whereLanguage: T.Optional(StringEnum(['sql', 'lucene'] as const, { description: 'lucene unless given' })),
  groupBy: T.Optional(T.Array(T.String({ maxLength: LIMITS.expression }), { maxItems: 10 })),
  displayType: T.Optional(StringEnum(['line', 'stacked_bar'] as const, { description: 'time series only' })),
  sortOrder: T.Optional(StringEnum(['asc', 'desc'] as const, { description: 'table series only' })),
  numberFormat: T.Optional(T.Record(T.String(), T.Unknown(), { description: 'how the value is shown' })),
});

/** A tile as sent: its `config`, or its `series` (the earlier form); exactly one of the two. */
export const Tile = T.Object({
  ...TilePlace,
  config: T.Optional(TileConfigBody),
  series: T.Optional(T.Array(SeriesItem, { minItems: 1, maxItems: LIMITS.selectsPerTile })),
  asRatio: T.Optional(
    T.Boolean({ description: 'series tiles only; a ratio of two series is not supported' }),
  ),
});

/** A tile with its config: how every tile is checked, stored and evaluated. */
export const ConfigTile = T.Object({ ...TilePlace, config: TileConfigBody });

export const DashboardBody = T.Object({
  name: T.String({ minLength: 1, maxLength: 1024 }),
  tags: T.Optional(T.Array(T.String({ maxLength: 128 }), { maxItems: 50 })),
  tiles: T.Optional(T.Array(Tile, { maxItems: LIMITS.tilesPerDashboard })),
});
export type DashboardBody = Static<typeof DashboardBody>;
export type TileBody = Static<typeof Tile>;
export type TileConfig = Static<typeof ConfigTile>;
export type SeriesItem = Static<typeof SeriesItem>;

/** A tile sent as series is answered as series, as the original's API of that form did. */
const SeriesTileRecord = T.Object({
  ...TilePlace,
  id: T.String(),
  asRatio: T.Boolean(),
  series: T.Array(SeriesItem),
});

export const DashboardRecord = T.Object({
  id: T.String(),
  name: T.String(),
  tiles: T.Array(
    T.Union([T.Object({ ...TilePlace, id: T.String(), config: TileConfigBody }), SeriesTileRecord]),
  ),
  tags: T.Array(T.String()),
});
export type DashboardRecord = Static<typeof DashboardRecord>;

export const ListQuery = T.Object({
  limit: T.Optional(T.Integer({ minimum: 1, maximum: 1000 })),
  offset: T.Optional(T.Integer({ minimum: 0 })),
});

export { Id };
