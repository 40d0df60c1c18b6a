import type { Queryable } from './db.js';

export interface WebhookRow {
  id: string;
  teamId: string;
  name: string;
  url: string;
  description: string | null;
  body: string | null;
  /** Sealed JSON of the write-only headers and query parameters. */
  secrets: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface SourceRow {
  id: string;
  teamId: string;
  name: string;
  kind: string;
  serviceId: string;
  databaseName: string;
  tableName: string;
  timestampExpression: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface DashboardRow {
  id: string;
  teamId: string;
  name: string;
  tags: string[];
  tiles: Record<string, unknown>[];
  createdAt: Date;
  updatedAt: Date;
}

export interface AlertRow {
  id: string;
  teamId: string;
  name: string | null;
  message: string | null;
  threshold: number;
  thresholdMax: number | null;
  interval: string;
  thresholdType: string;
  source: string;
  state: string;
  dashboardId: string;
  tileId: string;
  webhookId: string;
  silenced: Record<string, unknown> | null;
  createdAt: Date;
  updatedAt: Date;
}

const WEBHOOK = `id, team_id as "teamId", name, url, description, body, secrets, created_at as "createdAt", updated_at as "updatedAt"`;
const SOURCE = `id, team_id as "teamId", name, kind, service_id as "serviceId", database_name as "databaseName",
  table_name as "tableName", timestamp_expression as "timestampExpression", created_at as "createdAt", updated_at as "updatedAt"`;
const DASHBOARD = `id, team_id as "teamId", name, tags, tiles, created_at as "createdAt", updated_at as "updatedAt"`;
const ALERT = `id, team_id as "teamId", name, message, threshold, threshold_max as "thresholdMax", interval,
  threshold_type as "thresholdType", source, state, dashboard_id as "dashboardId", tile_id as "tileId",
  webhook_id as "webhookId", silenced, created_at as "createdAt", updated_at as "updatedAt"`;

/** The alerts area: webhooks, sources, dashboards and alerts, each scoped to a team. */
export class AlertsRepo {
  constructor(private readonly db: Queryable) {}

  // Webhooks
  async listWebhooks(teamId: string, limit: number, offset: number): Promise<WebhookRow[]> {
    return this.db.query<WebhookRow>(
      `select ${WEBHOOK} from webhooks where team_id = $1 order by created_at, id limit $2 offset $3`,
      [teamId, limit, offset],
    );
  }
  async countWebhooks(teamId: string): Promise<number> {
    return this.count('webhooks', teamId);
  }
  async getWebhook(teamId: string, id: string): Promise<WebhookRow | undefined> {
    return (
      await this.db.query<WebhookRow>(`select ${WEBHOOK} from webhooks where team_id = $1 and id = $2`, [
        teamId,
        id,
      ])
    )[0];
  }
  async putWebhook(row: WebhookRow): Promise<void> {
    await this.db.query(
      `insert into webhooks (id, team_id, name, url, description, body, secrets, created_at, updated_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       on conflict (id) do update set name = $3, url = $4, description = $5, body = $6, secrets = $7, updated_at = $9`,
      [
        row.id,
        row.teamId,
        row.name,
        row.url,
        row.description,
        row.body,
        row.secrets,
        row.createdAt,
        row.updatedAt,
      ],
    );
  }
  async deleteWebhook(id: string): Promise<void> {
    await this.db.query('delete from webhooks where id = $1', [id]);
  }
  async alertsUsingWebhook(id: string): Promise<number> {
    const rows = await this.db.query<{ n: number }>(
      'select count(*)::int as n from alerts where webhook_id = $1',
      [id],
    );
    return rows[0]?.n ?? 0;
  }

  // Sources
  async listSources(teamId: string, limit: number, offset: number): Promise<SourceRow[]> {
    return this.db.query<SourceRow>(
      `select ${SOURCE} from alert_sources where team_id = $1 order by created_at, id limit $2 offset $3`,
      [teamId, limit, offset],
    );
  }
  async countSources(teamId: string): Promise<number> {
    return this.count('alert_sources', teamId);
  }
  async getSource(teamId: string, id: string): Promise<SourceRow | undefined> {
    return (
      await this.db.query<SourceRow>(`select ${SOURCE} from alert_sources where team_id = $1 and id = $2`, [
        teamId,
        id,
      ])
    )[0];
  }
  async putSource(row: SourceRow): Promise<void> {
    await this.db.query(
      `insert into alert_sources (id, team_id, name, kind, service_id, database_name, table_name, timestamp_expression, created_at, updated_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       on conflict (id) do update set name = $3, kind = $4, service_id = $5, database_name = $6, table_name = $7,
         timestamp_expression = $8, updated_at = $10`,
      [
        row.id,
        row.teamId,
        row.name,
        row.kind,
        row.serviceId,
        row.databaseName,
        row.tableName,
        row.timestampExpression,
        row.createdAt,
        row.updatedAt,
      ],
    );
  }
  async deleteSource(id: string): Promise<void> {
    await this.db.query('delete from alert_sources where id = $1', [id]);
  }

  // Dashboards
  async listDashboards(teamId: string, limit: number, offset: number): Promise<DashboardRow[]> {
    return this.db.query<DashboardRow>(
      `select ${DASHBOARD} from dashboards where team_id = $1 order by created_at, id limit $2 offset $3`,
      [teamId, limit, offset],
    );
  }
  async countDashboards(teamId: string): Promise<number> {
    return this.count('dashboards', teamId);
  }
  async getDashboard(teamId: string, id: string): Promise<DashboardRow | undefined> {
    return (
      await this.db.query<DashboardRow>(
        `select ${DASHBOARD} from dashboards where team_id = $1 and id = $2`,
        [teamId, id],
      )
    )[0];
  }
  async putDashboard(row: DashboardRow): Promise<void> {
    await this.db.query(
      `insert into dashboards (id, team_id, name, tags, tiles, created_at, updated_at)
       values ($1, $2, $3, $4::jsonb, $5::jsonb, $6, $7)
       on conflict (id) do update set name = $3, tags = $4::jsonb, tiles = $5::jsonb, updated_at = $7`,
      [
        row.id,
        row.teamId,
        row.name,
        JSON.stringify(row.tags),
        JSON.stringify(row.tiles),
        row.createdAt,
        row.updatedAt,
      ],
    );
  }
  async deleteDashboard(id: string): Promise<void> {
    await this.db.query('delete from dashboards where id = $1', [id]);
  }
  /** Deletes the alerts of tiles no longer on a dashboard; returns their ids. */
  async deleteAlertsOfRemovedTiles(dashboardId: string, keptTileIds: string[]): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>(
      'delete from alerts where dashboard_id = $1 and not (tile_id = any($2::text[])) returning id',
      [dashboardId, keptTileIds],
    );
    return rows.map((row) => row.id);
  }
  async alertIdsOfDashboard(dashboardId: string): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>('select id from alerts where dashboard_id = $1', [
      dashboardId,
    ]);
    return rows.map((row) => row.id);
  }

  // Alerts
  async listAlerts(teamId: string, limit: number, offset: number): Promise<AlertRow[]> {
    return this.db.query<AlertRow>(
      `select ${ALERT} from alerts where team_id = $1 order by created_at, id limit $2 offset $3`,
      [teamId, limit, offset],
    );
  }
  async countAlerts(teamId: string): Promise<number> {
    return this.count('alerts', teamId);
  }
  async getAlert(id: string): Promise<AlertRow | undefined> {
    return (await this.db.query<AlertRow>(`select ${ALERT} from alerts where id = $1`, [id]))[0];
  }
  async putAlert(row: AlertRow): Promise<void> {
    await this.db.query(
      `insert into alerts (id, team_id, name, message, threshold, threshold_max, interval, threshold_type, source, state,
         dashboard_id, tile_id, webhook_id, silenced, created_at, updated_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::jsonb, $15, $16)
       on conflict (id) do update set name = $3, message = $4, threshold = $5, threshold_max = $6, interval = $7,
         threshold_type = $8, source = $9, state = $10, dashboard_id = $11, tile_id = $12, webhook_id = $13,
         silenced = $14::jsonb, updated_at = $16`,
      [
        row.id,
        row.teamId,
        row.name,
        row.message,
        row.threshold,
        row.thresholdMax,
        row.interval,
        row.thresholdType,
        row.source,
        row.state,
        row.dashboardId,
        row.tileId,
        row.webhookId,
        row.silenced === null ? null : JSON.stringify(row.silenced),
        row.createdAt,
        row.updatedAt,
      ],
    );
  }
  async deleteAlert(id: string): Promise<void> {
    await this.db.query('delete from alerts where id = $1', [id]);
  }

  private async count(
    table: 'webhooks' | 'alert_sources' | 'dashboards' | 'alerts',
    teamId: string,
  ): Promise<number> {
    const rows = await this.db.query<{ n: number }>(
      `select count(*)::int as n from ${table} where team_id = $1`,
      [teamId],
    );
    return rows[0]?.n ?? 0;
  }
}

export interface HistoryRow {
  alertId: string;
  windowStart: Date;
  windowEnd: Date;
  groupKey: string | null;
  state: string | null;
  value: number | null;
  threshold: number;
  error: string | null;
  createdAt: Date;
}

/** Alert evaluation: the alerts to check, their history, their state after each window. */
export class EvaluationRepo {
  constructor(private readonly db: Queryable) {}

  /** Every alert with what its evaluation needs: its last evaluated window, its team's organization. */
  async alertsToEvaluate(): Promise<
    (AlertRow & { evaluatedUntil: Date | null; lastNotifiedAt: Date | null; organizationId: string })[]
  > {
    return this.db.query(
      `select a.id, a.team_id as "teamId", a.name, a.message, a.threshold, a.threshold_max as "thresholdMax",
              a.interval, a.threshold_type as "thresholdType", a.source, a.state, a.dashboard_id as "dashboardId",
              a.tile_id as "tileId", a.webhook_id as "webhookId", a.silenced, a.created_at as "createdAt",
              a.updated_at as "updatedAt", a.evaluated_until as "evaluatedUntil", a.last_notified_at as "lastNotifiedAt",
              t.organization_id as "organizationId"
         from alerts a join teams t on t.id = a.team_id order by a.created_at`,
    );
  }

  /** The tiles of these dashboards, read once for all the alerts on them. */
  async tilesOf(dashboardIds: string[]): Promise<Map<string, Record<string, unknown>[]>> {
    const rows = await this.db.query<{ id: string; tiles: Record<string, unknown>[] }>(
      'select id, tiles from dashboards where id = any($1::text[])',
      [dashboardIds],
    );
    return new Map(rows.map((row) => [row.id, row.tiles]));
  }

  /** Many rows a statement (a tick writes thousands). */
  async addHistory(rows: HistoryRow[]): Promise<void> {
    const chunk = 500;
    for (let start = 0; start < rows.length; start += chunk) {
      const part = rows.slice(start, start + chunk);
      const values = part.map(
        (_, i) => `(${Array.from({ length: 9 }, (_, j) => `$${i * 9 + j + 1}`).join(', ')})`,
      );
      await this.db.query(
        `insert into alert_history (alert_id, window_start, window_end, group_key, state, value, threshold, error, created_at)
         values ${values.join(', ')}`,
        part.flatMap((row) => [
          row.alertId,
          row.windowStart,
          row.windowEnd,
          row.groupKey,
          row.state,
          row.value,
          row.threshold,
          row.error,
          row.createdAt,
        ]),
      );
    }
  }

  /** States after the windows evaluated, for many alerts in one statement; returns the ids still there. */
  async setEvaluatedMany(rows: { id: string; state: string; until: Date }[]): Promise<Set<string>> {
    if (rows.length === 0) return new Set();
    const updated = await this.db.query<{ id: string }>(
      `update alerts a set state = v.state, evaluated_until = v.until
         from unnest($1::text[], $2::text[], $3::timestamptz[]) as v(id, state, until)
        where a.id = v.id returning a.id`,
      [rows.map((r) => r.id), rows.map((r) => r.state), rows.map((r) => r.until)],
    );
    return new Set(updated.map((row) => row.id));
  }

  /** The state after the windows evaluated up to `until`; false when the alert is gone. */
  async setEvaluated(alertId: string, state: string, until: Date): Promise<boolean> {
    const rows = await this.db.query<{ id: string }>(
      'update alerts set state = $2, evaluated_until = $3 where id = $1 returning id',
      [alertId, state, until],
    );
    return rows.length > 0;
  }

  async history(alertId: string, limit: number, offset: number): Promise<HistoryRow[]> {
    return this.db.query<HistoryRow>(
      `select alert_id as "alertId", window_start as "windowStart", window_end as "windowEnd", group_key as "groupKey",
              state, value, threshold, error, created_at as "createdAt"
         from alert_history where alert_id = $1 order by window_start desc, id desc limit $2 offset $3`,
      [alertId, limit, offset],
    );
  }

  async countHistory(alertId: string): Promise<number> {
    const rows = await this.db.query<{ n: number }>(
      'select count(*)::int as n from alert_history where alert_id = $1',
      [alertId],
    );
    return rows[0]?.n ?? 0;
  }

  /** History is kept 30 days (reference/alerts.md). */
  async pruneHistory(before: Date): Promise<void> {
    await this.db.query('delete from alert_history where created_at < $1', [before]);
  }
}

export interface OutboxRow {
  id: number;
  alertId: string;
  teamId: string;
  webhookId: string;
  idempotencyKey: string;
  variables: Record<string, unknown>;
  attempts: number;
  deliveredAt: Date | null;
  failedAt: Date | null;
  lastError: string | null;
}

const OUTBOX = `id::float8 as id, alert_id as "alertId", team_id as "teamId", webhook_id as "webhookId",
  idempotency_key as "idempotencyKey", variables, attempts, delivered_at as "deliveredAt", failed_at as "failedAt",
  last_error as "lastError"`;

/**
 * Notifications to send, written in the same transaction as the decision that made them, so a
 * crash between deciding and sending still sends (at least once; receivers drop repeats by the
 * Idempotency-Key).
 */
export class OutboxRepo {
  constructor(private readonly db: Queryable) {}

  async add(
    row: {
      alertId: string;
      teamId: string;
      webhookId: string;
      idempotencyKey: string;
      variables: Record<string, unknown>;
    },
    at: Date,
  ) {
    await this.db.query(
      `insert into alert_outbox (alert_id, team_id, webhook_id, idempotency_key, variables, next_attempt_at, created_at)
       values ($1, $2, $3, $4, $5::jsonb, $6, $6) on conflict (idempotency_key) do nothing`,
      [row.alertId, row.teamId, row.webhookId, row.idempotencyKey, JSON.stringify(row.variables), at],
    );
  }

  async due(now: Date, limit: number): Promise<OutboxRow[]> {
    return this.db.query<OutboxRow>(
      `select ${OUTBOX} from alert_outbox where delivered_at is null and failed_at is null and next_attempt_at <= $1
        order by id limit $2`,
      [now, limit],
    );
  }

  async delivered(id: number, attempts: number, at: Date): Promise<void> {
    await this.db.query(
      'update alert_outbox set delivered_at = $3, attempts = $2, last_error = null where id = $1',
      [id, attempts, at],
    );
  }

  async failed(id: number, attempts: number, error: string, at: Date): Promise<void> {
    await this.db.query(
      'update alert_outbox set failed_at = $4, attempts = $2, last_error = $3 where id = $1',
      [id, attempts, error, at],
    );
  }

  async forAlert(alertId: string): Promise<OutboxRow[]> {
    return this.db.query<OutboxRow>(`select ${OUTBOX} from alert_outbox where alert_id = $1 order by id`, [
      alertId,
    ]);
  }

  async markNotified(alertId: string, at: Date): Promise<void> {
    await this.db.query('update alerts set last_notified_at = $2 where id = $1', [alertId, at]);
  }
}
