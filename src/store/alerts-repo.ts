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
