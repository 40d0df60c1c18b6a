import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
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
  // Each route counts its own responses in a hook of its own, which knows its pattern: a request
  // reads neither the route's options (Fastify builds that object on every read) nor builds label
  // strings. Label children are kept per method and status, so a request costs no label hashing.
  const recorder = (route: string) => {
    const byMethod = new Map<
      string,
      { timed: { observe(value: number): void }; counted: Map<number, { inc(): void }> }
    >();
    return (request: FastifyRequest, reply: FastifyReply) => {
      const method = request.method;
      let children = byMethod.get(method);
      if (!children) {
        children = { timed: duration.labels({ method, route }), counted: new Map() };
        byMethod.set(method, children);
      }
      const status = reply.statusCode;
      let counter = children.counted.get(status);
      if (!counter) {
        counter = requests.labels({ method, route, status: String(status) });
        children.counted.set(status, counter);
      }
      counter.inc();
      children.timed.observe(reply.elapsedTime / 1000);
    };
  };
  app.addHook('onRoute', (route) => {
    const record = recorder(route.url);
    const own = route.onResponse === undefined ? [] : [route.onResponse].flat();
    route.onResponse = [
      ...own,
      (request, reply, done) => {
        record(request, reply);
        done();
      },
    ];
  });
  // Requests no route matched (404s), under one label rather than their raw URLs.
  const unmatched = recorder('unmatched');
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) unmatched(request, reply);
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
