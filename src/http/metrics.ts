import type { FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import { UnauthorizedError } from '../errors.js';
import type { IdentityService } from '../identity/index.js';
import { limited, parseBasic } from './auth.js';
import type { AuthFailureLimiter } from './auth-failures.js';

/** The Prometheus registry of one Sluice process; domains add their own metrics to it. */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'sluice_' });
  return registry;
}

/** Request counts and latencies by route pattern (never the raw URL, which would explode labels). */
export function installHttpMetrics(
  app: FastifyInstance,
  registry: Registry,
  access: { identity: IdentityService; authFailures: AuthFailureLimiter },
): void {
  const requests = new Counter({
    name: 'sluice_http_requests_total',
    help: 'HTTP requests by method, route and status',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'sluice_http_request_duration_seconds',
    help: 'HTTP request latency by method and route',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  // Label children are kept per route, method and status so a request costs no label hashing.
  const counted = new Map<string, { inc(): void }>();
  const timed = new Map<string, { observe(value: number): void }>();
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const status = String(reply.statusCode);
    const key = `${request.method} ${route}`;
    let counter = counted.get(`${key} ${status}`);
    if (!counter) {
      counter = requests.labels({ method: request.method, route, status });
      counted.set(`${key} ${status}`, counter);
    }
    counter.inc();
    let histogram = timed.get(key);
    if (!histogram) {
      histogram = duration.labels({ method: request.method, route });
      timed.set(key, histogram);
    }
    histogram.observe(reply.elapsedTime / 1000);
    done();
  });
  // Pipe ids and organizations' activity are no one else's: a key of the operator organization
  // (any role; a read-only key for Prometheus' basic_auth) reads them.
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    const credentials = parseBasic(request.headers.authorization);
    const principal =
      credentials &&
      (await limited(access.authFailures, request, reply, () =>
        access.identity.authenticateKey(credentials.keyId, credentials.secret),
      ));
    if (!principal?.operator) {
      reply.header('WWW-Authenticate', 'Basic realm="sluice metrics", charset="UTF-8"');
      throw new UnauthorizedError(
        'metrics need an API key of the operator organization (any role): send Authorization: Basic base64(<key id>:<key secret>)',
      );
    }
    reply.type(registry.contentType);
    return registry.metrics();
  });
}
