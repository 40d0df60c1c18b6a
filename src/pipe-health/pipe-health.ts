import {
  type AlertsService,
  AreaNotFoundError,
  type DashboardsService,
  type SourcesService,
  type TeamScope,
  type WebhooksService,
} from '../alerts/index.js';
import { ValidationError } from '../errors.js';
import type { IdentityService } from '../identity/index.js';
import type { PipeRecord, PipesService, ServiceScope } from '../pipes/index.js';
import type { HealthAlertsMade, HealthAlertsRequest } from './schema.js';

/** A created pipe, with the alerts made for it when its body asked. */
export type CreatedPipe = PipeRecord & { healthAlerts?: HealthAlertsMade };

/** The team whose webhook the alerts notify, and what to watch: checked before the pipe is made. */
export interface HealthPlan {
  scope: TeamScope;
  request: HealthAlertsRequest;
}

/** One tile of the health dashboard and the alert on it. */
interface HealthCheck {
  name: string;
  select: { aggFn: string; valueExpression?: string; where: string };
  alert: { interval: string; thresholdType: string; threshold: number };
}

/**
 * The alerts a pipe's create body asks for (`healthAlerts`, README, "Pipe history"): a dashboard
 * of one tile per check over the service's built-in source, filtered to the pipe, and an alert on
 * each tile that notifies the webhook's team, in the alerts area's own model.
 */
export class PipeHealth {
  constructor(
    private readonly deps: {
      identity: IdentityService;
      webhooks: WebhooksService;
      sources: SourcesService;
      dashboards: DashboardsService;
      alerts: AlertsService;
    },
  ) {}

  /**
   * Creates a pipe, and the alerts its body asks for (`healthAlerts`): the webhook is checked
   * first, so a 400 for it stores nothing; alerts that cannot be made take the pipe back with them.
   */
  async createPipe(pipes: PipesService, scope: ServiceScope, body: unknown): Promise<CreatedPipe> {
    const { healthAlerts, ...pipeBody } = (body ?? {}) as { healthAlerts?: HealthAlertsRequest };
    if (healthAlerts === undefined) return pipes.create(scope, body);
    const plan = await this.plan(scope.organizationId, healthAlerts);
    const pipe = await pipes.create(scope, pipeBody);
    try {
      return { ...pipe, healthAlerts: await this.create(plan, pipe, scope.serviceId) };
    } catch (error) {
      await pipes.delete(scope, pipe.id);
      throw error;
    }
  }

  /** The team of the webhook `request` names; a 400 naming the field when no team of the organization has it. */
  async plan(organizationId: string, request: HealthAlertsRequest): Promise<HealthPlan> {
    for (const team of await this.deps.identity.listTeams(organizationId)) {
      const scope = { teamId: team.id, organizationId, userId: '' };
      try {
        await this.deps.webhooks.get(scope, request.webhookId);
        return { scope, request };
      } catch (error) {
        if (!(error instanceof AreaNotFoundError)) throw error;
      }
    }
    throw new ValidationError([
      {
        path: 'healthAlerts.webhookId',
        message:
          "No such webhook in a team of the pipe's organization: make one (POST /api/v2/webhooks) first",
      },
    ]);
  }

  /** Makes the dashboard and the alerts for the pipe just made. */
  async create(
    plan: HealthPlan,
    pipe: { id: string; name: string },
    serviceId: string,
  ): Promise<HealthAlertsMade> {
    const { scope } = plan;
    const source = (await this.deps.sources.builtInOf(scope)).find((s) => s.serviceId === serviceId);
    if (!source) throw new Error(`the service ${serviceId} has no built-in source`);
    const checks = checksOf(plan.request, `pipe_id:"${pipe.id}"`);
    const dashboard = await this.deps.dashboards.create(scope, {
      name: `Health of pipe ${pipe.name}`,
      tiles: checks.map((check, index) => ({
        name: check.name,
        x: (index % 2) * 6,
        y: Math.floor(index / 2) * 4,
        w: 6,
        h: 4,
        config: {
          displayType: 'line',
          sourceId: source.id,
          select: [{ ...check.select, whereLanguage: 'lucene' }],
        },
      })),
    });
    const alertIds: string[] = [];
    try {
      for (const [index, check] of checks.entries()) {
        const alert = await this.deps.alerts.create(scope, {
          name: `pipe ${pipe.name}: ${check.name}`,
          source: 'tile',
          dashboardId: dashboard.id,
          tileId: dashboard.tiles[index]?.id,
          channel: { type: 'webhook', webhookId: plan.request.webhookId },
          ...check.alert,
        });
        alertIds.push(alert.id);
      }
    } catch (error) {
      await this.deps.dashboards.delete(scope, dashboard.id); // its alerts go with it
      throw error;
    }
    return { dashboardId: dashboard.id, alertIds };
  }
}

/** The checks asked for, each a tile filtered to the pipe and its alert. */
function checksOf(request: HealthAlertsRequest, pipe: string): HealthCheck[] {
  const checks: HealthCheck[] = [];
  if (request.maxLag !== undefined) {
    checks.push({
      name: `lag above ${request.maxLag}`,
      select: { aggFn: 'max', valueExpression: 'lag', where: pipe },
      alert: { interval: '5m', thresholdType: 'above_exclusive', threshold: request.maxLag },
    });
  }
  if (request.badRecords !== false) {
    checks.push({
      name: 'bad records',
      select: { aggFn: 'sum', valueExpression: 'bad_records', where: pipe },
      alert: { interval: '1m', thresholdType: 'above_exclusive', threshold: 0 },
    });
  }
  if (request.noRowsFor !== undefined) {
    checks.push({
      name: `no rows for ${request.noRowsFor}`,
      select: { aggFn: 'sum', valueExpression: 'rows', where: pipe },
      alert: { interval: request.noRowsFor, thresholdType: 'below', threshold: 1 },
    });
  }
  checks.push({
    // Degraded or Failed, not "not Running": a snapshot, a one-off pipe Completed or a stop by
    // request is no trouble to be woken for.
    name: 'minutes Degraded or Failed',
    select: { aggFn: 'count', where: `${pipe} AND (state:Degraded OR state:Failed)` },
    alert: { interval: request.notRunningFor ?? '5m', thresholdType: 'above_exclusive', threshold: 0 },
  });
  return checks;
}
