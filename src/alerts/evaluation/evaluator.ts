import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { mapLimited } from '../../concurrency.js';
import type { EngineRegistry } from '../../engine/index.js';
import { codeOf, type ErrorCode } from '../../errors.js';
import type { IdentityService } from '../../identity/index.js';
import type { HistoryRow, Store } from '../../store/index.js';
import type { AlertsService } from '../alerts-service.js';
import type { AlertMetrics } from '../metrics.js';
import type { SourcesService } from '../sources-service.js';
import { exceeds } from './decide.js';
import { type Decision, DecisionWriter } from './decision-writer.js';
import { type AlertGroup, type EvaluatedAlert, planScans, rangeOf, type Scan, scopeOf } from './scans.js';
import { type Buckets, type QueriedTile, runTileQuery, runTileScan } from './tile-run.js';
import { type Window, windowsToEvaluate } from './windows.js';

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
    const groups = new Map<string, AlertGroup>();
    for (const alert of alerts) {
      const windows = windowsToEvaluate(now, alert.interval, alert.evaluatedUntil);
      if (windows.length === 0) continue;
      const key = `${alert.dashboardId}/${alert.tileId}/${alert.interval}`;
      // Pushed, not copied: 100 alerts on a tile copied one by one are 5,050 entries copied.
      const group = groups.get(key);
      if (group) group.push({ alert, windows });
      else groups.set(key, [{ alert, windows }]);
    }
    const tiles = await store.repos.evaluation.tilesOf([
      ...new Set(alerts.map((alert) => alert.dashboardId)),
    ]);
    const tileOf = (group: AlertGroup): QueriedTile | undefined => {
      const { alert } = group[0] as AlertGroup[number];
      return tiles.get(alert.dashboardId)?.find((t) => t.id === alert.tileId) as QueriedTile | undefined;
    };
    const { scans, alone } = planScans([...groups.values()], tileOf);
    const writer = new DecisionWriter(this.options, now);
    const work = [
      ...scans.map((scan) => () => this.evaluateScan(scan, tileOf, now, writer)),
      ...alone.map((group) => () => this.evaluateGroup(group, tileOf(group), now, writer)),
    ];
    const failed = await mapLimited(work, this.options.concurrency, (run) => run()).then(
      () => undefined,
      (error: unknown) => ({ error }),
    );
    // The decisions made before a failure are still written; both failures are told.
    try {
      await writer.done();
    } catch (error) {
      if (failed) this.options.logger.error({ err: failed.error }, 'alert tick failed');
      throw error;
    }
    if (failed) throw failed.error;
    await store.repos.evaluation.pruneHistory(new Date(now.getTime() - HISTORY_DAYS * 86_400_000));
  }

  /**
   * The groups of a scan in one query. When it fails (one tile's expression no longer fits its
   * table, say), each group is queried alone, so only the groups whose own query fails record
   * the failure.
   */
  private async evaluateScan(
    scan: Scan,
    tileOf: (group: AlertGroup) => QueriedTile | undefined,
    now: Date,
    writer: DecisionWriter,
  ): Promise<void> {
    let columns: Buckets[];
    try {
      this.options.metrics?.queries.inc({ kind: 'scan' });
      columns = await runTileScan(this.options, scan.scope, scan, scan.range);
    } catch (error) {
      this.options.logger.debug({ err: error }, "a scan of tiles failed: querying each tile's alerts alone");
      for (const { group } of scan.groups) await this.evaluateGroup(group, tileOf(group), now, writer);
      return;
    }
    for (const { group, column } of scan.groups)
      this.decideGroup(group, columns[column] as Buckets, now, writer);
  }

  /** One query for every window of the alerts on one tile and interval. */
  private async evaluateGroup(
    members: AlertGroup,
    tile: QueriedTile | undefined,
    now: Date,
    writer: DecisionWriter,
  ): Promise<void> {
    let buckets: Buckets;
    try {
      this.options.metrics?.queries.inc({ kind: 'tile' });
      buckets = await runTileQuery(this.options, scopeOf(members), tile, rangeOf(members));
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      const failure = { reason, code: codeOf(error) ?? 'SLUICE_ERR_INTERNAL' };
      await this.recordFailures(members, failure, now);
      return;
    }
    this.decideGroup(members, buckets, now, writer);
  }

  /** The group's decisions, handed to the writer: it writes them with the other tiles' (decision-writer.ts). */
  private decideGroup(members: AlertGroup, buckets: Buckets, now: Date, writer: DecisionWriter): void {
    const decisions = members.map(({ alert, windows }) => this.decide(alert, windows, buckets, now));
    for (const { windows } of members)
      this.options.metrics?.windows.inc({ outcome: 'evaluated' }, windows.length);
    writer.add(decisions);
  }

  /** The alert's state after its windows, its history rows and its notifications. */
  private decide(alert: EvaluatedAlert, windows: Window[], buckets: Buckets, now: Date): Decision {
    const history: HistoryRow[] = [];
    const notices: Notice[] = [];
    let state = alert.state;
    let notifiedAt = alert.lastNotifiedAt?.getTime() ?? null;
    for (const window of windows) {
      // An empty bucket counts as 0, so a `below` alert fires on silence.
      const values = buckets.get(window.start.getTime()) ?? SILENCE;
      let breach: number | undefined;
      let shown: number | undefined;
      for (const [group, value] of values) {
        const groupState = exceeds(value, alert.thresholdType, alert.threshold, alert.thresholdMax)
          ? 'ALERT'
          : 'OK';
        if (groupState === 'ALERT') breach ??= value;
        shown ??= value;
        // A literal, not base()'s spread: a tick of 100,000 alerts writes 200,000 of these.
        history.push({
          alertId: alert.id,
          windowStart: window.start,
          windowEnd: window.end,
          groupKey: group,
          state: groupState,
          value,
          threshold: alert.threshold,
          error: null,
          createdAt: now,
        });
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

/** An empty bucket: one value, 0, of no group. */
const SILENCE: ReadonlyMap<string | null, number> = new Map([[null, 0]]);

function base(alert: EvaluatedAlert, window: Window, now: Date) {
  return {
    alertId: alert.id,
    windowStart: window.start,
    windowEnd: window.end,
    threshold: alert.threshold,
    createdAt: now,
  };
}
