import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { mapLimited } from '../../concurrency.js';
import type { EngineRegistry } from '../../engine/index.js';
import { codeOf, type ErrorCode } from '../../errors.js';
import type { IdentityService } from '../../identity/index.js';
import type { AlertRow, HistoryRow, Store } from '../../store/index.js';
import type { AlertsService } from '../alerts-service.js';
import type { AlertMetrics } from '../metrics.js';
import type { SourcesService } from '../sources-service.js';
import { exceeds } from './decide.js';
import { type Buckets, type QueriedTile, runTileQuery } from './tile-run.js';
import { intervalMs, type Window, windowsToEvaluate } from './windows.js';

type EvaluatedAlert = AlertRow & {
  evaluatedUntil: Date | null;
  lastNotifiedAt: Date | null;
  organizationId: string;
};

/** What evaluating one alert's windows decided, written with the rest of its tile's alerts. */
interface Decision {
  alertId: string;
  state: string;
  until: Date;
  history: HistoryRow[];
  notices: ReturnType<typeof outboxRow>[];
  notifiedAt: Date;
}

/** A state change (or a reminder while it lasts) to tell the alert's webhook about. */
interface Notice {
  window: Window;
  state: 'OK' | 'ALERT';
  value: number;
  kind: 'alert' | 'resolved' | 'reminder';
}

/**
 * The notification's variables (for the webhook's body template) and its idempotency key, derived
 * from (alert, window, state) so a receiver can drop repeats.
 */
function outboxRow(alert: EvaluatedAlert, notice: Notice, baseUrl: string) {
  const eventId = createHash('sha256')
    .update(`${alert.id}:${notice.window.start.toISOString()}:${notice.state}:${notice.kind}`)
    .digest('hex')
    .slice(0, 32);
  const name = alert.name ?? `Alert ${alert.id}`;
  const verb =
    notice.kind === 'resolved' ? 'resolved' : notice.kind === 'reminder' ? 'still firing' : 'firing';
  const range = alert.thresholdMax === null ? '' : `..${alert.thresholdMax}`;
  return {
    alertId: alert.id,
    teamId: alert.teamId,
    webhookId: alert.webhookId,
    idempotencyKey: eventId,
    variables: {
      title: `${name} is ${verb}`,
      body:
        alert.message ?? `${alert.thresholdType} ${alert.threshold}${range}: the value is ${notice.value}`,
      link: `${baseUrl}/api/v2/alerts/${alert.id}`,
      state: notice.state,
      startTime: notice.window.start.toISOString(),
      endTime: notice.window.end.toISOString(),
      eventId,
      value: notice.value,
      threshold: alert.threshold,
    },
  };
}

export interface EvaluatorOptions {
  store: Store;
  engines: EngineRegistry;
  identity: IdentityService;
  alerts: AlertsService;
  /** The team's sources, built-in ones included (a service's pipe history). */
  sources: Pick<SourcesService, 'find'>;
  logger: Logger;
  /** The time now; tests pass their own clock. */
  clock: () => Date;
  /** Longest a tile query may run in the engine. */
  queryTimeoutMs: number;
  /** Tile queries run at once, at most. */
  concurrency: number;
  /** While an alert stays ALERT, remind at most this often (none when undefined). */
  reminderMs?: number | undefined;
  /** Counts for /metrics. */
  metrics?: AlertMetrics;
  /** Where users reach this server, for the absolute `link` of notifications ('' before known). */
  baseUrl?: () => string;
}

const HISTORY_DAYS = 30;

/**
 * Evaluates every alert's completed windows (README, "Alerts area": how alerts are evaluated):
 * alerts that share a tile and an interval share one query over all their windows; each window's
 * value (an empty bucket counts as 0) is compared per group, and the alert is ALERT when any group
 * breaks its threshold. A failing query changes no state: it is recorded, and the windows are
 * tried again on the next tick. Ticks never overlap: a tick asked for while one runs waits for it.
 */
export class AlertEvaluator {
  private last: Promise<void> = Promise.resolve();

  constructor(private readonly options: EvaluatorOptions) {}

  /** Resolves when no tick runs (for a clean shutdown). */
  idle(): Promise<void> {
    return this.last;
  }

  tick(): Promise<void> {
    const next = this.last.then(() => this.evaluate(this.options.clock()));
    this.last = next.catch((error) => this.options.logger.error({ err: error }, 'alert tick failed'));
    return next;
  }

  private async evaluate(now: Date): Promise<void> {
    const { store } = this.options;
    const alerts = await store.repos.evaluation.alertsToEvaluate(now);
    const groups = new Map<string, { alerts: { alert: EvaluatedAlert; windows: Window[] }[] }>();
    for (const alert of alerts) {
      const windows = windowsToEvaluate(now, alert.interval, alert.evaluatedUntil);
      if (windows.length === 0) continue;
      const key = `${alert.dashboardId}/${alert.tileId}/${alert.interval}`;
      const group = groups.get(key) ?? { alerts: [] };
      group.alerts.push({ alert, windows });
      groups.set(key, group);
    }
    const tiles = await store.repos.evaluation.tilesOf([
      ...new Set(alerts.map((alert) => alert.dashboardId)),
    ]);
    await mapLimited([...groups.values()], this.options.concurrency, (group) =>
      this.evaluateGroup(group.alerts, tiles.get(group.alerts[0]?.alert.dashboardId ?? '') ?? [], now),
    );
    await store.repos.evaluation.pruneHistory(new Date(now.getTime() - HISTORY_DAYS * 86_400_000));
  }

  /** One query for every window of the alerts on one tile and interval. */
  private async evaluateGroup(
    members: { alert: EvaluatedAlert; windows: Window[] }[],
    dashboardTiles: Record<string, unknown>[],
    now: Date,
  ): Promise<void> {
    const first = members[0]?.alert as EvaluatedAlert;
    const starts = members.flatMap((m) => m.windows.map((w) => w.start.getTime()));
    const ends = members.flatMap((m) => m.windows.map((w) => w.end.getTime()));
    let buckets: Buckets;
    try {
      const tile = dashboardTiles.find((t) => t.id === first.tileId) as QueriedTile | undefined;
      const scope = { teamId: first.teamId, organizationId: first.organizationId, userId: '' };
      buckets = await runTileQuery(this.options, scope, tile, {
        start: new Date(Math.min(...starts)),
        end: new Date(Math.max(...ends)),
        intervalSeconds: intervalMs(first.interval) / 1000,
      });
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      const failure = { reason, code: codeOf(error) ?? 'SLUICE_ERR_INTERNAL' };
      await this.recordFailures(members, failure, now);
      return;
    }
    // Every decision of the group in one transaction of three statements (states, history,
    // notifications): a statement per alert or per notice would dominate a tick.
    const decisions = members.map(({ alert, windows }) => this.decide(alert, windows, buckets, now));
    for (const { windows } of members)
      this.options.metrics?.windows.inc({ outcome: 'evaluated' }, windows.length);
    await this.options.store.transaction(async (repos) => {
      // Alerts deleted meanwhile keep no history and send nothing.
      const present = await repos.evaluation.setEvaluatedMany(
        decisions.map((d) => ({
          id: d.alertId,
          state: d.state,
          until: d.until,
          notifiedAt: d.notices.length > 0 ? d.notifiedAt : null,
        })),
      );
      const kept = decisions.filter((d) => present.has(d.alertId));
      for (const decision of kept) this.options.metrics?.decisions.inc({ state: decision.state });
      await repos.evaluation.addHistory(kept.flatMap((d) => d.history));
      await repos.outbox.add(
        kept.flatMap((d) => d.notices),
        now,
      );
    });
    this.options.alerts.forget(members.map(({ alert }) => alert.id));
  }

  /** The alert's state after its windows, its history rows and its notifications. */
  private decide(alert: EvaluatedAlert, windows: Window[], buckets: Buckets, now: Date): Decision {
    const history: HistoryRow[] = [];
    const notices: Notice[] = [];
    let state = alert.state;
    let notifiedAt = alert.lastNotifiedAt?.getTime() ?? null;
    for (const window of windows) {
      // An empty bucket counts as 0, so a `below` alert fires on silence.
      const values = buckets.get(window.start.getTime()) ?? new Map<string | null, number>([[null, 0]]);
      let breach: number | undefined;
      let shown: number | undefined;
      for (const [group, value] of values) {
        const groupState = exceeds(value, alert.thresholdType, alert.threshold, alert.thresholdMax)
          ? 'ALERT'
          : 'OK';
        if (groupState === 'ALERT') breach ??= value;
        shown ??= value;
        history.push({ ...base(alert, window, now), groupKey: group, state: groupState, value, error: null });
      }
      const next = breach === undefined ? 'OK' : 'ALERT';
      const value = breach ?? shown ?? 0;
      const reminderDue =
        this.options.reminderMs !== undefined &&
        (notifiedAt === null || window.end.getTime() - notifiedAt >= this.options.reminderMs);
      if (next !== state || (next === 'ALERT' && reminderDue)) {
        notices.push({
          window,
          state: next,
          value,
          kind: next === state ? 'reminder' : next === 'ALERT' ? 'alert' : 'resolved',
        });
        notifiedAt = window.end.getTime();
      }
      state = next;
    }
    // A silenced alert still evaluates, and sends nothing (README, "Alerts area").
    const silencedUntil = (alert.silenced as { until?: string } | null)?.until;
    const silenced = silencedUntil !== undefined && new Date(silencedUntil) > now;
    const last = windows[windows.length - 1] as Window;
    return {
      alertId: alert.id,
      state,
      until: last.end,
      history,
      notices: silenced
        ? []
        : notices.map((notice) => outboxRow(alert, notice, this.options.baseUrl?.() ?? '')),
      notifiedAt: new Date(notifiedAt ?? last.end.getTime()),
    };
  }

  /** The group's windows failed: one history write for all its alerts, a warning per alert failing anew. */
  private async recordFailures(
    members: { alert: EvaluatedAlert; windows: Window[] }[],
    { reason, code }: { reason: string; code: ErrorCode },
    now: Date,
  ): Promise<void> {
    const rows = members.flatMap(({ alert, windows }) =>
      windows.map((window) => ({
        ...base(alert, window, now),
        groupKey: null,
        state: null,
        value: null,
        error: reason,
        errorCode: code,
      })),
    );
    // A window that keeps failing keeps one history row and one warning; its attempts count up.
    const first = new Set(
      (await this.options.store.repos.evaluation.recordFailures(rows)).map((r) => r.alertId),
    );
    for (const { alert, windows } of members) {
      this.options.metrics?.windows.inc({ outcome: 'failed' }, windows.length);
      const log = first.has(alert.id) ? this.options.logger.warn : this.options.logger.debug;
      log.call(
        this.options.logger,
        { alertId: alert.id, error: reason, code, windows: windows.length },
        'alert query failed; the windows are retried next tick',
      );
    }
  }
}

function base(alert: EvaluatedAlert, window: Window, now: Date) {
  return {
    alertId: alert.id,
    windowStart: window.start,
    windowEnd: window.end,
    threshold: alert.threshold,
    createdAt: now,
  };
}
