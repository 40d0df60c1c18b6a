/** The alerts area's shapes the console reads (README, "Alerts area"), only the fields it uses. */

export const INTERVALS = ['1m', '5m', '15m', '30m', '1h', '6h', '12h', '1d'] as const;
export const THRESHOLD_TYPES = [
  'above',
  'above_exclusive',
  'below',
  'below_or_equal',
  'equal',
  'not_equal',
  'between',
  'not_between',
] as const;
export const DISPLAY_TYPES = ['line', 'stacked_bar', 'number', 'table'] as const;
export const AGG_FNS = ['count', 'sum', 'avg', 'min', 'max', 'count_distinct', 'quantile'] as const;

export interface AlertSource {
  id: string;
  name: string;
  kind: string;
  serviceId: string;
  from: { databaseName: string; tableName: string };
  timestampValueExpression: string;
}

export interface TileSelect {
  aggFn: string;
  level?: number;
  valueExpression?: string;
  where?: string;
  whereLanguage?: 'sql' | 'lucene';
  alias?: string;
}

export interface Tile {
  id: string;
  name: string;
  x: number;
  y: number;
  w: number;
  h: number;
  config?: {
    displayType: (typeof DISPLAY_TYPES)[number];
    sourceId: string;
    select: TileSelect[];
    groupBy?: string;
  };
  /** The earlier form of a tile: drawn as its type says (the server reads it as a config). */
  series?: {
    type: string;
    displayType?: string;
    sourceId: string;
    aggFn: string;
    level?: number;
    field?: string;
    alias?: string;
    where?: string;
    whereLanguage?: 'sql' | 'lucene';
    groupBy?: string[];
  }[];
}

export interface Dashboard {
  id: string;
  name: string;
  tags: string[];
  tiles: Tile[];
}

export interface TileData {
  from: string;
  to: string;
  granularity: string;
  truncated: boolean;
  series: { select: number; label: string; group?: string; points: { t: string; value: number }[] }[];
}

export interface Webhook {
  id: string;
  name: string;
  url: string;
  description?: string | null;
  body?: string | null;
}

export interface Alert {
  id: string;
  name?: string | null;
  message?: string | null;
  source: string;
  state: 'OK' | 'ALERT';
  interval: string;
  threshold: number;
  thresholdMax?: number;
  thresholdType: string;
  dashboard: string;
  tileId: string;
  channel: { type: string; webhookId: string };
  /** `by` is the id of the user who silenced it. */
  silenced?: { until: string; by?: string; at?: string };
  updatedAt: string;
}

/** What PUT /api/v2/alerts/{id} takes to change only `changes`: it is a full replace. */
export function alertBody(alert: Alert, changes: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: alert.name ?? null,
    message: alert.message ?? null,
    interval: alert.interval,
    thresholdType: alert.thresholdType,
    threshold: alert.threshold,
    ...(alert.thresholdMax === undefined ? {} : { thresholdMax: alert.thresholdMax }),
    source: alert.source,
    dashboardId: alert.dashboard,
    tileId: alert.tileId,
    channel: alert.channel,
    silenced: alert.silenced ? { until: alert.silenced.until } : null,
    ...changes,
  };
}

export interface HistoryRow {
  windowStart: string;
  windowEnd: string;
  group: string | null;
  state: 'OK' | 'ALERT' | null;
  value: number | null;
  threshold: number;
  error: string | null;
  errorCode: string | null;
  attempts: number;
}

/** How a tile is drawn, whichever form it was sent in. */
export function displayOf(tile: Tile): string {
  if (tile.config) return tile.config.displayType;
  const first = tile.series?.[0];
  return first?.type === 'time' ? (first.displayType ?? 'line') : (first?.type ?? 'line');
}

export function isSilenced(alert: Alert, now = Date.now()): boolean {
  return alert.silenced !== undefined && new Date(alert.silenced.until).getTime() > now;
}

export const v2 = {
  sources: '/api/v2/sources',
  dashboards: '/api/v2/dashboards',
  dashboard: (id: string) => `/api/v2/dashboards/${e(id)}`,
  tileData: (dashboard: string, tile: string, from: Date, to: Date) =>
    `/api/v2/dashboards/${e(dashboard)}/tiles/${e(tile)}/data?from=${from.toISOString()}&to=${to.toISOString()}`,
  alerts: '/api/v2/alerts',
  alert: (id: string) => `/api/v2/alerts/${e(id)}`,
  history: (id: string, limit = 200) => `/api/v2/alerts/${e(id)}/history?limit=${limit}`,
  webhooks: '/api/v2/webhooks',
  webhook: (id: string) => `/api/v2/webhooks/${e(id)}`,
  webhookTest: (id: string) => `/api/v2/webhooks/${e(id)}/test`,
};

/** Ids from the address are written into paths encoded: a crafted link cannot reach another route. */
const e = encodeURIComponent;
