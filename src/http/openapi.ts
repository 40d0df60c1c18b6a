import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';

/**
 * The OpenAPI 3.1 document, generated from the same TypeBox schemas that the domains validate
 * with, so it cannot drift from what the server accepts. Must be registered before the routes.
 */
export async function installOpenApi(app: FastifyInstance, version: string): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Sluice',
        version,
        description: AREA_DESCRIPTIONS['/v1'],
      },
      components: {
        securitySchemes: {
          basicAuth: { type: 'http', scheme: 'basic' },
          bearerAuth: { type: 'http', scheme: 'bearer' },
        },
      },
      security: [{ basicAuth: [] }],
    },
  });
}

/** What each area's document says of it, and how its callers authenticate. */
const AREA_DESCRIPTIONS = {
  '/v1':
    'Pipes that move data into tables of a database service, and the organizations, services and keys they belong to. HTTP Basic with an API key (key id and secret). Errors carry a stable `code` (SLUICE_ERR_*) beside `error`.',
  '/api/v2':
    'Alerts on dashboard tiles over the data, with their dashboards, sources and webhooks. A bearer access token of a team: `Authorization: Bearer <token>`. Errors carry a stable `code` (SLUICE_ERR_*) beside `message`.',
} as const;

/**
 * GET /v1/openapi.json and GET /api/v2/openapi.json: each area's paths, with its own scheme (HTTP
 * Basic with API keys, bearer access tokens) and description.
 */
export function openApiRoute(app: FastifyInstance): void {
  const area = (prefix: keyof typeof AREA_DESCRIPTIONS, security: Record<string, string[]>) => async () => {
    const document = app.swagger() as { info: object; paths?: Record<string, unknown> };
    const paths = Object.fromEntries(
      Object.entries(document.paths ?? {}).filter(
        ([path]) => path === prefix || path.startsWith(`${prefix}/`),
      ),
    );
    const info = { ...document.info, description: AREA_DESCRIPTIONS[prefix] };
    return { ...document, info, paths, security: [security] };
  };
  app.get('/v1/openapi.json', { schema: { hide: true } }, area('/v1', { basicAuth: [] }));
  app.get('/api/v2/openapi.json', { schema: { hide: true } }, area('/api/v2', { bearerAuth: [] }));
}
