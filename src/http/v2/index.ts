import type { FastifyInstance } from 'fastify';
import type {
  AlertsService,
  DashboardsService,
  SourcesService,
  TileDataService,
  WebhookNotifier,
  WebhooksService,
} from '../../alerts/index.js';
import type { ConsoleSessions, IdentityService } from '../../identity/index.js';
import type { AuthFailureLimiter } from '../auth-failures.js';
import { additionRoutes } from './additions.js';
import { bearerAuth } from './auth.js';
import { alertsAreaRoutes } from './routes.js';

/** Everything under /api/v2, behind bearer access tokens. */
export async function v2Routes(
  app: FastifyInstance,
  deps: {
    identity: IdentityService;
    consoleSessions: ConsoleSessions;
    alerts: AlertsService;
    webhooks: WebhooksService;
    sources: SourcesService;
    dashboards: DashboardsService;
    tileData: TileDataService;
    notifier: WebhookNotifier;
    authFailures: AuthFailureLimiter;
  },
) {
  await app.register(async (scope) => {
    scope.addHook('onRequest', bearerAuth(deps.identity, deps.authFailures, deps.consoleSessions));
    alertsAreaRoutes(scope, deps);
    additionRoutes(scope, deps);
  });
}
