/** A dashboard body with one number tile over `sourceId`: a count, unless `select` says more. */
export function oneTileDashboard(
  sourceId: string,
  select: Record<string, unknown> = {},
  config: Record<string, unknown> = {},
) {
  return {
    name: 'd',
    tiles: [
      {
        name: 't',
        x: 0,
        y: 0,
        w: 4,
        h: 4,
        config: { displayType: 'number', sourceId, select: [{ aggFn: 'count', ...select }], ...config },
      },
    ],
  };
}

/** A log source body over `app.requests` of `serviceId`, its timestamp `ts` unless overridden. */
export function requestsSource(serviceId: string, overrides: Record<string, unknown> = {}) {
  return {
    name: 'requests',
    kind: 'log',
    serviceId,
    from: { databaseName: 'app', tableName: 'requests' },
    timestampValueExpression: 'ts',
    ...overrides,
  };
}

/**
 * An alert body on the first tile of `dashboard` that notifies webhook `webhookId`: every 5m,
 * above its threshold, unless `fields` says otherwise (the threshold and name are the caller's).
 */
export function tileAlert(
  dashboard: { id: string; tiles: { id: string }[] },
  webhookId: string,
  fields: Record<string, unknown> = {},
) {
  return {
    interval: '5m',
    thresholdType: 'above',
    source: 'tile',
    dashboardId: dashboard.id,
    tileId: dashboard.tiles[0]?.id,
    channel: { type: 'webhook', webhookId },
    ...fields,
  };
}
