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

const HISTORY_COLUMNS =
  'alert_id, window_start, window_end, group_key, state, value, threshold, error, error_code, created_at';

/** History rows as one array a column, so a statement is the same size whatever the row count. */
const HISTORY_ARRAYS = `select * from unnest($1::text[], $2::timestamptz[], $3::timestamptz[], $4::text[], $5::text[],
    $6::float8[], $7::float8[], $8::text[], $9::text[], $10::timestamptz[]) as h(${HISTORY_COLUMNS})`;

/**
 * Text a PostgreSQL column can hold: it refuses NUL, and a group's value (the tenant's data) or an
 * engine's message holding one would fail the write of every team's decisions beside it.
 */
function storable(value: string | null): string | null {
  return value?.includes('\u0000') ? value.replaceAll('\u0000', '\uFFFD') : value;
}

function historyArrays(rows: HistoryRow[]): unknown[][] {
  return [
    rows.map((row) => row.alertId),
    rows.map((row) => row.windowStart),
    rows.map((row) => row.windowEnd),
    rows.map((row) => storable(row.groupKey)),
    rows.map((row) => row.state),
    rows.map((row) => row.value),
    rows.map((row) => row.threshold),
    rows.map((row) => storable(row.error)),
    rows.map((row) => row.errorCode ?? null),
    rows.map((row) => row.createdAt),
  ];
}

/** A text value in COPY's text format: \\N is null; backslash, tab, newline and return are escaped. */
function copyText(text: string | null): string {
  const value = storable(text);
  if (value === null) return '\\N';
  return /[\\\t\n\r]/.test(value)
    ? value.replace(/[\\\t\n\r]/g, (c) =>
        c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r',
      )
    : value;
}

/** A float8 in COPY's text format: JavaScript prints NaN and Infinity as PostgreSQL reads them. */
function copyNumber(value: number | null): string {
  return value === null ? '\\N' : String(value);
}

/** Alert evaluation: the alerts to check, their history, their state after each window. */
/** An alert's interval (`5m`, `1h`, `1d`) in seconds, in SQL. */
const INTERVAL_SECONDS = `substring(a.interval from '^[0-9]+')::int *
  case right(a.interval, 1) when 'm' then 60 when 'h' then 3600 else 86400 end`;

export class EvaluationRepo {
  constructor(private readonly db: Queryable) {}

  /** Every alert with what its evaluation needs: its last evaluated window, its team's organization. */
  /**
   * The alerts with a window that ended by `now`: never evaluated, or evaluated until at least an
   * interval ago (README "Alerts area": an interval is a number of m, h or d). A tick reads only
   * those, not every alert: 100,000 alerts of 5 minutes ticking every few seconds are mostly not due.
   */
  async alertsToEvaluate(
    now: Date,
  ): Promise<
    (AlertRow & { evaluatedUntil: Date | null; lastNotifiedAt: Date | null; organizationId: string })[]
  > {
    // One JSON text for all the rows: PGlite (on the event loop's thread) decodes 100,000 rows of
    // 19 columns in about 2.3 s, one JSON.parse of the same rows takes about half that (issue 39).
    const rows = await this.db.query<{ alerts: string }>(
      `select coalesce(json_agg(d order by d."createdAt"), '[]')::text as alerts from (
       select a.id, a.team_id as "teamId", a.name, a.message, a.threshold, a.threshold_max as "thresholdMax",
              a.interval, a.threshold_type as "thresholdType", a.source, a.state, a.dashboard_id as "dashboardId",
              a.tile_id as "tileId", a.webhook_id as "webhookId", a.silenced, a.created_at as "createdAt",
              a.updated_at as "updatedAt", a.evaluated_until as "evaluatedUntil", a.last_notified_at as "lastNotifiedAt",
              t.organization_id as "organizationId"
         from alerts a join teams t on t.id = a.team_id
        where a.evaluated_until is null
           or a.evaluated_until + make_interval(secs => ${INTERVAL_SECONDS}) <= $1) d`,
      [now],
    );
    const alerts = JSON.parse(rows[0]?.alerts ?? '[]') as (Omit<AlertRow, 'createdAt' | 'updatedAt'> & {
      createdAt: string;
      updatedAt: string;
      evaluatedUntil: string | null;
      lastNotifiedAt: string | null;
      organizationId: string;
    })[];
    return alerts.map((alert) => ({
      ...alert,
      createdAt: new Date(alert.createdAt),
      updatedAt: new Date(alert.updatedAt),
      evaluatedUntil: alert.evaluatedUntil === null ? null : new Date(alert.evaluatedUntil),
      lastNotifiedAt: alert.lastNotifiedAt === null ? null : new Date(alert.lastNotifiedAt),
    }));
  }

  /** The tiles of these dashboards, read once for all the alerts on them. */
  async tilesOf(dashboardIds: string[]): Promise<Map<string, Record<string, unknown>[]>> {
    const rows = await this.db.query<{ id: string; tiles: Record<string, unknown>[] }>(
      'select id, tiles from dashboards where id = any($1::text[])',
      [dashboardIds],
    );
    return new Map(rows.map((row) => [row.id, row.tiles]));
  }

  /**
   * All the rows in one statement, each column an array: a tick writes its tiles' history at once,
   * and one array parameter a column keeps the statement the same size whatever the row count.
   * Rows of an alert deleted meanwhile are left out (the table has no foreign key: migration 15).
   */
  async addHistory(rows: HistoryRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db.query(
      `insert into alert_history (${HISTORY_COLUMNS}) ${HISTORY_ARRAYS}
        where exists (select 1 from alerts a where a.id = h.alert_id)`,
      historyArrays(rows),
    );
  }

  /**
   * History rows of alerts this transaction has just updated (setEvaluatedMany returned them):
   * their rows are locked until it commits, so none can be deleted meanwhile and, unlike
   * addHistory, no row is checked against `alerts`. On PGlite the rows go in by COPY, about half
   * the time of the arrays' insert per row (bench/alerts.ts: 199,800 rows in the goal case of issue 39);
   * on PostgreSQL, whose client has no COPY through a query, by the same arrays as addHistory.
   */
  async addHistoryOfUpdated(rows: HistoryRow[]): Promise<void> {
    if (rows.length === 0) return;
    if (!this.db.copyFrom) {
      await this.db.query(
        `insert into alert_history (${HISTORY_COLUMNS}) ${HISTORY_ARRAYS}`,
        historyArrays(rows),
      );
      return;
    }
    // A tick's rows share a few instants (its windows' bounds, its time): each printed once.
    const printed = new Map<number, string>();
    const iso = (date: Date) => {
      const ms = date.getTime();
      const known = printed.get(ms);
      if (known !== undefined) return known;
      const text = date.toISOString();
      printed.set(ms, text);
      return text;
    };
    let text = '';
    for (const row of rows) {
      text += `${copyText(row.alertId)}\t${iso(row.windowStart)}\t${iso(row.windowEnd)}\t${copyText(row.groupKey)}\t${copyText(row.state)}\t${copyNumber(row.value)}\t${copyNumber(row.threshold)}\t${copyText(row.error)}\t${copyText(row.errorCode ?? null)}\t${iso(row.createdAt)}\n`;
    }
    await this.db.copyFrom(`copy alert_history (${HISTORY_COLUMNS}) from '/dev/blob'`, text);
  }

  /**
   * Failed evaluations of windows, in two statements whatever their number: a window that failed
   * before and has not been evaluated since keeps one row, whose error and attempts are brought up
   * to date; otherwise a new row. Returns the windows failing for the first time.
   */
  async recordFailures(rows: HistoryRow[]): Promise<HistoryRow[]> {
    if (rows.length === 0) return [];
    const updated = await this.db.query<{ alertId: string; windowStart: Date }>(
      `with failed as (
         select * from unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::timestamptz[])
           as f(alert_id, window_start, error, error_code, created_at)),
       latest as (
         select distinct on (f.alert_id, f.window_start) h.id, h.state, f.error, f.error_code, f.created_at
           from failed f join alert_history h on h.alert_id = f.alert_id and h.window_start = f.window_start
          order by f.alert_id, f.window_start, h.id desc)
       update alert_history h set error = latest.error, error_code = latest.error_code, attempts = h.attempts + 1,
              created_at = latest.created_at
         from latest where h.id = latest.id and latest.state is null
       returning h.alert_id as "alertId", h.window_start as "windowStart"`,
      [
        rows.map((row) => row.alertId),
        rows.map((row) => row.windowStart),
        rows.map((row) => storable(row.error)),
        rows.map((row) => row.errorCode ?? null),
        rows.map((row) => row.createdAt),
      ],
    );
    const again = new Set(updated.map((row) => `${row.alertId}@${row.windowStart.getTime()}`));
    const first = rows.filter((row) => !again.has(`${row.alertId}@${row.windowStart.getTime()}`));
    await this.addHistory(first);
    return first;
  }

  /**
   * States after the windows evaluated, for many alerts in one statement, and when they were last
   * notified for those that notified now (null leaves it as it was); returns the ids still there.
   */
  async setEvaluatedMany(
    rows: { id: string; state: string; until: Date; notifiedAt?: Date | null }[],
  ): Promise<Set<string>> {
    if (rows.length === 0) return new Set();
    // One JSON text rather than four arrays, and a count rather than the ids back: PGlite (on the
    // event loop's thread) updated 100,000 alerts in 1.0 s this way, 1.5 s with arrays and ids
    // returned (issue 39; JSON.stringify prints the dates as ISO text, which timestamptz reads).
    const [{ updated } = { updated: 0 }] = await this.db.query<{ updated: number }>(
      `with updated as (
         update alerts a set state = v.state, evaluated_until = v.until,
                last_notified_at = coalesce(v.notified_at, a.last_notified_at)
           from json_to_recordset($1::json) as v(id text, state text, until timestamptz, notified_at timestamptz)
          where a.id = v.id returning 1)
       select count(*)::int as updated from updated`,
      [
        JSON.stringify(
          rows.map((r) => ({ id: r.id, state: r.state, until: r.until, notified_at: r.notifiedAt ?? null })),
        ),
      ],
    );
    const ids = rows.map((r) => r.id);
    if (updated === rows.length) return new Set(ids);
    // Some were deleted meanwhile: those updated are locked until this transaction ends, and an
    // alert missing then cannot come back under its id, so those present now are those updated.
    const present = await this.db.query<{ id: string }>('select id from alerts where id = any($1::text[])', [
      ids,
    ]);
    return new Set(present.map((row) => row.id));
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

  /**
   * History is kept 30 days (README, "Alerts area"): the rows before the oldest one written since
   * `before`, in the order of their ids, go. Rows are written in the order of their ticks, so the
   * primary key is walked from the oldest row only as far as the rows to delete, with no index on
   * created_at to keep up on every write (migration 16). A row never goes early: an old row with a
   * higher id than a recent one goes once the rows before it have (a failing window's row, whose
   * created_at each retry brings up to date for at most a day, windows.ts, holds the rows after it).
   */
  async pruneHistory(before: Date): Promise<void> {
    await this.db.query(
      `delete from alert_history
        where id < coalesce((select id from alert_history where created_at >= $1 order by id limit 1),
                            9223372036854775807)`,
      [before],
    );
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

  /** Many notifications in one statement (a tick notifies a tile's alerts at once); a repeated key is dropped. */
  async add(
    rows: {
      alertId: string;
      teamId: string;
      webhookId: string;
      idempotencyKey: string;
      variables: Record<string, unknown>;
    }[],
    at: Date,
  ): Promise<void> {
    if (rows.length === 0) return;
    await this.db.query(
      `insert into alert_outbox (alert_id, team_id, webhook_id, idempotency_key, variables, next_attempt_at, created_at)
       select n.alert_id, n.team_id, n.webhook_id, n.idempotency_key, n.variables::jsonb, $6, $6
         from unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $5::text[])
           as n(alert_id, team_id, webhook_id, idempotency_key, variables)
       on conflict (idempotency_key) do nothing`,
      [
        rows.map((row) => row.alertId),
        rows.map((row) => row.teamId),
        rows.map((row) => row.webhookId),
        rows.map((row) => row.idempotencyKey),
        rows.map((row) => JSON.stringify(row.variables)),
        at,
      ],
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
}
