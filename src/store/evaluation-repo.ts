import type { AlertRow } from './alerts-repo.js';
import type { Queryable } from './db.js';

export interface HistoryRow {
  alertId: string;
  windowStart: Date;
  windowEnd: Date;
  groupKey: string | null;
  state: string | null;
  value: number | null;
  threshold: number;
  error: string | null;
  /** The catalog code of `error` (src/error-codes.ts); null for an evaluated window. */
  errorCode?: string | null;
  createdAt: Date;
  /** How many ticks tried this window and failed (1 for an evaluated row). */
  attempts?: number;
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
        (_, i) => `(${Array.from({ length: 10 }, (_, j) => `$${i * 10 + j + 1}`).join(', ')})`,
      );
      await this.db.query(
        `insert into alert_history (alert_id, window_start, window_end, group_key, state, value, threshold, error, error_code, created_at)
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
          row.errorCode ?? null,
          row.createdAt,
        ]),
      );
    }
  }

  /**
   * A failed evaluation of a window: a window that failed before and has not been evaluated since
   * keeps one row, whose error and attempts are brought up to date; otherwise a new row. Returns
   * the windows failing for the first time.
   */
  async recordFailures(rows: HistoryRow[]): Promise<HistoryRow[]> {
    const first: HistoryRow[] = [];
    for (const row of rows) {
      const updated = await this.db.query<{ id: string }>(
        `with latest as (
           select id, state from alert_history where alert_id = $1 and window_start = $2 order by id desc limit 1)
         update alert_history h set error = $3, error_code = $5, attempts = h.attempts + 1, created_at = $4
           from latest where h.id = latest.id and latest.state is null returning h.id`,
        [row.alertId, row.windowStart, row.error, row.createdAt, row.errorCode ?? null],
      );
      if (updated.length === 0) first.push(row);
    }
    await this.addHistory(first);
    return first;
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
              state, value, threshold, error, error_code as "errorCode", created_at as "createdAt", attempts
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

  /** History is kept 30 days (README, "Alerts area"). */
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
