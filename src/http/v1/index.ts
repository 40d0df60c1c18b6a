import type { FastifyInstance } from 'fastify';
import type { ConsoleSessions, IdentityService } from '../../identity/index.js';
import type { PipeHealth } from '../../pipe-health/index.js';
import type { CdcScalingService, PipeDiscovery, PipesService } from '../../pipes/index.js';
import type { QueryService } from '../../query/index.js';
import { basicAuth } from '../auth.js';
import type { AuthFailureLimiter } from '../auth-failures.js';
import { discoveryRoutes } from './discovery-routes.js';
import { identityRoutes } from './identity-routes.js';
import { pipeRoutes } from './pipe-routes.js';
import { queryRoutes } from './query-routes.js';

/** Everything under /v1, behind HTTP Basic with API keys. */
export async function v1Routes(
  app: FastifyInstance,
  deps: {
    identity: IdentityService;
    consoleSessions: ConsoleSessions;
    pipes: PipesService;
    pipeHealth: PipeHealth;
    discovery: PipeDiscovery;
    cdcScaling: CdcScalingService;
    query: QueryService;
    authFailures: AuthFailureLimiter;
  },
) {
  await app.register(async (scope) => {
    scope.addHook('onRequest', basicAuth(deps.identity, deps.authFailures, deps.consoleSessions));
    identityRoutes(scope, deps.identity);
    pipeRoutes(scope, deps.pipes, deps.pipeHealth);
    discoveryRoutes(scope, deps);
    queryRoutes(scope, deps.query);
  });
}
