import type { FastifyInstance } from 'fastify';
import type { IdentityService } from '../../identity/index.js';
import type { PipesService } from '../../pipes/index.js';
import { basicAuth } from '../auth.js';
import { identityRoutes } from './identity-routes.js';
import { pipeRoutes } from './pipe-routes.js';

/** Everything under /v1, behind HTTP Basic with API keys. */
export async function v1Routes(
  app: FastifyInstance,
  deps: { identity: IdentityService; pipes: PipesService },
) {
  await app.register(async (scope) => {
    scope.addHook('onRequest', basicAuth(deps.identity));
    identityRoutes(scope, deps.identity);
    pipeRoutes(scope, deps.pipes);
  });
}
