import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { BackoffDelays } from '../backoff.js';
import { mapLimited } from '../concurrency.js';
import { type ErrorCode, SluiceError } from '../errors.js';
import { postPublic, privateHostProblem } from '../net/index.js';
import type { OutboxRow, Store } from '../store/index.js';
import type { TeamScope } from './context.js';
import type { AlertMetrics } from './metrics.js';
import type { WebhooksService } from './webhooks-service.js';

export interface NotifierOptions {
  store: Store;
  webhooks: WebhooksService;
  logger: Logger;
  allowPrivate: boolean;
  clock: () => Date;
  /**
   * First delay between attempts; it doubles up to 10 s, each delay jittered down by up to half
   * (src/backoff.ts).
   */
  backoffMs?: number;
  /** Counts for /metrics. */
  metrics?: AlertMetrics;
  /** Where users reach this server, for the `link` of a test notification ('' before known). */
  baseUrl?: () => string;
}

/** What one notification is sent with: an outbox row, or a test that has none. */
type Delivery = Pick<OutboxRow, 'teamId' | 'webhookId' | 'idempotencyKey' | 'variables'>;

/** The answer of a test send: whether the webhook took it, its status, or why not. */
export interface TestSendResult {
  ok: boolean;
  status?: number;
  error?: string;
}

const ATTEMPTS = 3;
const TIMEOUT_MS = 30_000;
const MAX_BACKOFF_MS = 10_000;

/** Why a delivery failed, and whether another attempt may succeed. */
class DeliveryError extends Error {
  readonly code: ErrorCode = 'SLUICE_ERR_WEBHOOK_DELIVERY';

  constructor(
    message: string,
    readonly retry: boolean,
    /** The webhook's HTTP status, when it answered. */
    readonly status?: number,
  ) {
    super(message);
  }
}

/**
 * Sends the alert notifications of the outbox to their webhooks (README, "Alerts area"): POST of the
 * webhook's body template filled in, its headers and query parameters, an Idempotency-Key; three
 * attempts with jittered backoff, no retry on a 4xx other than 429, 30 s a try, redirects refused,
 * and the private-address rule checked again at send time, after DNS resolution. A webhook that
 * keeps failing is recorded on its notification, and nothing else stops.
 */
export class WebhookNotifier {
  private last: Promise<void> = Promise.resolve();
  /** The teams with a test send under way. */
  private readonly testing = new Set<string>();

  constructor(private readonly options: NotifierOptions) {}

  /** Sends what is due; calls made while one runs wait for it (never two senders at once). */
  deliverDue(): Promise<void> {
    const next = this.last.then(() => this.sendDue());
    this.last = next.catch((error) =>
      this.options.logger.error({ err: error }, 'notification delivery failed'),
    );
    return next;
  }

  idle(): Promise<void> {
    return this.last;
  }

  private async sendDue(): Promise<void> {
    const due = await this.options.store.repos.outbox.due(this.options.clock(), 100);
    await mapLimited(due, 4, (row) => this.deliver(row));
  }

  private async deliver(row: OutboxRow): Promise<void> {
    const { store } = this.options;
    let attempts = row.attempts;
    const delays = new BackoffDelays({ baseMs: this.options.backoffMs ?? 1000, maxMs: MAX_BACKOFF_MS });
    for (;;) {
      attempts += 1;
      const about = { alertId: row.alertId, webhookId: row.webhookId, attempt: attempts };
      try {
        const status = await this.send(row);
        await store.repos.outbox.delivered(row.id, attempts, new Date());
        this.options.metrics?.deliveries.inc({ outcome: 'delivered' });
        this.options.logger.info({ ...about, status }, 'webhook notification delivered');
        return;
      } catch (error) {
        const failure = error instanceof DeliveryError ? error : new DeliveryError(String(error), true);
        if (!failure.retry || attempts >= ATTEMPTS) {
          await store.repos.outbox.failed(row.id, attempts, failure.message, new Date());
          this.options.metrics?.deliveries.inc({ outcome: 'failed' });
          this.options.logger.warn({ ...about, error: failure.message }, 'webhook notification failed');
          return;
        }
        this.options.metrics?.deliveries.inc({ outcome: 'retried' });
        this.options.logger.info({ ...about, error: failure.message }, 'webhook notification retried');
        await new Promise((resolve) => setTimeout(resolve, delays.next()));
      }
    }
  }

  /**
   * Sends one notification that says it is a test to a webhook of the team now (README, "Alerts
   * area": `POST /api/v2/webhooks/{id}/test`), through the same template, headers and
   * private-address rule as an alert's, once and without the outbox: no alert's state, history or
   * notifications change.
   */
  async sendTest(scope: TeamScope, webhookId: string): Promise<TestSendResult> {
    const webhook = await this.options.webhooks.get(scope, webhookId);
    // One at a time per team: each may hold a connection for 30 s, and its answer says how a host
    // answered, which many at once would make a cheap way to sweep addresses.
    if (this.testing.has(scope.teamId)) {
      throw new SluiceError(
        'SLUICE_ERR_RATE_LIMITED',
        429,
        "a test send of this team's is still under way: wait for its answer, then send again",
      );
    }
    this.testing.add(scope.teamId);
    try {
      return await this.testSend(scope, webhook);
    } finally {
      this.testing.delete(scope.teamId);
    }
  }

  private async testSend(scope: TeamScope, webhook: { id: string; name: string }): Promise<TestSendResult> {
    const now = this.options.clock().toISOString();
    const eventId = `test-${randomUUID()}`;
    const variables = {
      title: `Test notification from Sluice to ${webhook.name}`,
      body: 'This is a test sent from the console or the API; no alert changed state.',
      link: `${this.options.baseUrl?.() ?? ''}/api/v2/webhooks/${webhook.id}`,
      state: 'TEST',
      startTime: now,
      endTime: now,
      eventId,
      value: 0,
      threshold: 0,
      test: true,
    };
    const delivery = { teamId: scope.teamId, webhookId: webhook.id, idempotencyKey: eventId, variables };
    try {
      return { ok: true, status: await this.send(delivery) };
    } catch (error) {
      const status = error instanceof DeliveryError ? error.status : undefined;
      return { ok: false, ...(status === undefined ? {} : { status }), error: (error as Error).message };
    }
  }

  /** One call of the webhook; its HTTP status when it took the notification. */
  private async send(row: Delivery): Promise<number> {
    const webhook = await this.options.webhooks.forDelivery(row.teamId, row.webhookId);
    if (!webhook) throw new DeliveryError('the webhook no longer exists', false);
    const url = new URL(webhook.url);
    for (const [name, value] of Object.entries(webhook.queryParams)) url.searchParams.set(name, value);
    if (!this.options.allowPrivate) {
      const problem = await privateHostProblem(url.hostname, 'SLUICE_ALLOW_PRIVATE_WEBHOOKS');
      if (problem) throw new DeliveryError(problem, false);
    }
    let status: number;
    try {
      // The check above gives the reason a user reads; the connection itself is held to public
      // addresses too, so a name that resolves elsewhere the second time is refused (postPublic).
      status = await postPublic(url, {
        headers: {
          ...webhook.headers,
          'content-type': 'application/json',
          'idempotency-key': row.idempotencyKey,
        },
        body: render(webhook.body, row.variables),
        timeoutMs: TIMEOUT_MS,
        allowPrivate: this.options.allowPrivate,
      });
    } catch (error) {
      throw new DeliveryError(`the request failed: ${(error as Error).message}`, true);
    }
    if (status >= 200 && status < 300) return status;
    if (status >= 300 && status < 400) {
      throw new DeliveryError(`the webhook answered ${status}: redirects are refused`, false, status);
    }
    const retry = status === 429 || status >= 500;
    throw new DeliveryError(`the webhook answered ${status}`, retry, status);
  }
}

/**
 * The webhook's template with `{{name}}` filled in. Values are escaped as the inside of a JSON
 * string, so a template like `{"text": "{{title}}"}` stays JSON whatever the title holds. Without
 * a template the body is every variable as JSON.
 */
export function render(template: string | null, variables: Record<string, unknown>): string {
  if (!template) return JSON.stringify(variables);
  return template.replace(/\{\{\s*(\w+)\s*\}\}/g, (whole, name: string) =>
    name in variables ? JSON.stringify(String(variables[name])).slice(1, -1) : whole,
  );
}
