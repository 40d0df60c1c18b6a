import { type Problem, ValidationError } from '../errors.js';
import { checker } from '../schema/index.js';
import { type AlertRow, perRow, type Store, WriteThroughCache } from '../store/index.js';
import { AreaNotFoundError, listPage, type Page, pageOf, type TeamScope } from './context.js';
import { isId, newId } from './ids.js';
import { AlertBody, type AlertRecord, RANGE_TYPES } from './schemas.js';

const checkBody = checker(AlertBody);

/**
 * Alerts on dashboard tiles (README, "Alerts area"). Every read and write is
 * scoped to the caller's team; what an alert points at must be the team's too. A new alert is OK.
 */
export class AlertsService {
  /** Alerts by id, when this process is the store's only writer (GET /alerts/{id} is hot). */
  private readonly cache: WriteThroughCache<AlertRow> | undefined;

  constructor(private readonly store: Store) {
    this.cache = store.singleWriter ? new WriteThroughCache() : undefined;
  }

  async list(scope: TeamScope, query: unknown): Promise<Page<AlertRecord>> {
    const repo = this.store.repos.alerts;
    return listPage(
      query,
      (limit, offset) => repo.listAlerts(scope.teamId, limit, offset),
      () => repo.countAlerts(scope.teamId),
      toRecord,
    );
  }

  async get(scope: TeamScope, id: string): Promise<AlertRecord> {
    requireWellFormed(id);
    const row = this.cache
      ? await this.cache.read(id, () => this.store.repos.alerts.getAlert(id))
      : await this.store.repos.alerts.getAlert(id);
    if (!row || row.teamId !== scope.teamId) throw new AreaNotFoundError('Alert');
    return toRecord(row);
  }

  async create(scope: TeamScope, body: unknown): Promise<AlertRecord> {
    const valid = await this.validate(scope, body);
    const now = new Date();
    const row = toRow(scope, newId(), valid, 'OK', now, now);
    await this.store.repos.alerts.putAlert(row);
    this.cache?.written(row.id, row);
    return toRecord(row);
  }

  /** A full replace, not a merge (README, "Alerts area"); the state is kept. */
  async replace(scope: TeamScope, id: string, body: unknown): Promise<AlertRecord> {
    requireWellFormed(id);
    const valid = await this.validate(scope, body);
    const row = await this.store.transaction(async (repos) => {
      const existing = await repos.alerts.getAlert(id);
      if (!existing || existing.teamId !== scope.teamId) throw new AreaNotFoundError('Alert');
      this.cache?.invalidate(id);
      const next = toRow(scope, id, valid, existing.state, existing.createdAt, new Date());
      await repos.alerts.putAlert(next);
      return next;
    });
    this.cache?.written(id, row);
    return toRecord(row);
  }

  /**
   * Idempotent, as the original API: an alert already gone (or never the team's, which answers the
   * same so ids of other teams are not revealed) is a 200 that deletes nothing.
   */
  async delete(scope: TeamScope, id: string): Promise<void> {
    requireWellFormed(id);
    await this.store.transaction(async (repos) => {
      const existing = await repos.alerts.getAlert(id);
      if (!existing || existing.teamId !== scope.teamId) return;
      this.cache?.invalidate(id);
      await repos.alerts.deleteAlert(id);
    });
    this.cache?.written(id, undefined);
  }

  /** Evaluations of an alert, newest window first (an addition: GET /api/v2/alerts/{id}/history). */
  async history(scope: TeamScope, id: string, query: unknown) {
    await this.get(scope, id);
    const { limit, offset } = pageOf(query);
    const [rows, total] = await Promise.all([
      this.store.repos.evaluation.history(id, limit, offset),
      this.store.repos.evaluation.countHistory(id),
    ]);
    return {
      data: rows.map((row) => ({
        windowStart: row.windowStart.toISOString(),
        windowEnd: row.windowEnd.toISOString(),
        group: row.groupKey,
        state: row.state,
        value: row.value,
        threshold: row.threshold,
        error: row.error,
        errorCode: row.errorCode ?? null,
        attempts: row.attempts ?? 1,
        evaluatedAt: row.createdAt.toISOString(),
      })),
      meta: { total, limit, offset },
    };
  }

  /** Alerts whose stored row changed elsewhere (evaluation) or went with a dashboard or a tile. */
  forget(ids: string[]): void {
    for (const id of ids) this.cache?.written(id, undefined);
  }

  private async validate(scope: TeamScope, body: unknown): Promise<AlertBody> {
    const problems: Problem[] = checkBody(body);
    const alert = (body ?? {}) as Partial<AlertBody>;
    if (typeof alert.thresholdType === 'string') {
      const ranged = RANGE_TYPES.includes(alert.thresholdType);
      if (ranged && alert.thresholdMax === undefined) {
        problems.push({ path: 'thresholdMax', message: `Required for ${alert.thresholdType}` });
      }
      if (!ranged && alert.thresholdMax !== undefined) {
        problems.push({
          path: 'thresholdMax',
          message: 'Only used with thresholdType between or not_between',
        });
      }
      if (ranged && typeof alert.thresholdMax === 'number' && typeof alert.threshold === 'number') {
        if (alert.thresholdMax < alert.threshold) {
          problems.push({ path: 'thresholdMax', message: 'Must be at least threshold' });
        }
      }
    }
    if (alert.source === 'saved_search') {
      problems.push({ path: 'source', message: 'saved_search alerts are not supported yet: use tile' });
    }
    if (problems.length === 0) problems.push(...(await this.referenceProblems(scope, alert as AlertBody)));
    if (problems.length) throw new ValidationError(problems);
    return alert as AlertBody;
  }

  /** The dashboard, its tile and the webhook must all be the caller's team's (else a 400). */
  private async referenceProblems(scope: TeamScope, alert: AlertBody): Promise<Problem[]> {
    const problems: Problem[] = [];
    const repo = this.store.repos.alerts;
    const dashboard = isId(alert.dashboardId)
      ? await repo.getDashboard(scope.teamId, alert.dashboardId)
      : undefined;
    if (!dashboard) problems.push({ path: 'dashboardId', message: 'No such dashboard in your team' });
    else if (!dashboard.tiles.some((tile) => tile.id === alert.tileId)) {
      problems.push({ path: 'tileId', message: 'No such tile on the dashboard' });
    }
    const webhook = isId(alert.channel.webhookId)
      ? await repo.getWebhook(scope.teamId, alert.channel.webhookId)
      : undefined;
    if (!webhook) problems.push({ path: 'channel.webhookId', message: 'No such webhook in your team' });
    return problems;
  }
}

function requireWellFormed(id: string): void {
  if (!isId(id))
    throw new ValidationError(
      [{ path: 'id', message: 'Invalid id: expected 24 hexadecimal characters' }],
      'Params',
    );
}

function toRow(
  scope: TeamScope,
  id: string,
  body: AlertBody,
  state: string,
  createdAt: Date,
  updatedAt: Date,
): AlertRow {
  return {
    id,
    teamId: scope.teamId,
    name: body.name ?? null,
    message: body.message ?? null,
    threshold: body.threshold,
    thresholdMax: body.thresholdMax ?? null,
    interval: body.interval,
    thresholdType: body.thresholdType,
    source: body.source,
    state,
    dashboardId: body.dashboardId,
    tileId: body.tileId,
    webhookId: body.channel.webhookId,
    silenced: body.silenced
      ? { by: scope.userId, at: updatedAt.toISOString(), until: body.silenced.until }
      : null,
    createdAt,
    updatedAt,
  };
}

/**
 * The record of an alert, built once per row (`perRow`): the cache hands out the same row until
 * the alert changes, so a GET reuses its record and its JSON (src/http/record-json.ts).
 */
export const toRecord: (row: AlertRow) => AlertRecord = perRow(buildRecord);

/** Exactly the keys of the platform's record for a tile alert; the extensions only when set. */
function buildRecord(row: AlertRow): AlertRecord {
  return {
    id: row.id,
    name: row.name,
    message: row.message,
    threshold: row.threshold,
    ...(row.thresholdMax === null ? {} : { thresholdMax: row.thresholdMax }),
    interval: row.interval,
    thresholdType: row.thresholdType,
    source: row.source,
    state: row.state,
    channel: { type: 'webhook', webhookId: row.webhookId },
    team: row.teamId,
    tileId: row.tileId,
    dashboard: row.dashboardId,
    ...(row.silenced ? { silenced: row.silenced as { by: string; at: string; until: string } } : {}),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
