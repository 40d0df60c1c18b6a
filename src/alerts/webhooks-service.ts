import { SEALED_CONTEXT, type SecretBox } from '../crypto/index.js';
import { ConflictError, ValidationError } from '../errors.js';
import { checker } from '../schema/index.js';
import type { Store, WebhookRow } from '../store/index.js';
import { AreaNotFoundError, listPage, type Page, type TeamScope } from './context.js';
import { isId, newId } from './ids.js';
import { WebhookBody, type WebhookRecord } from './schemas.js';
import { webhookUrlProblem } from './webhook-url.js';

const checkBody = checker(WebhookBody);

/** Webhooks that alerts notify; headers and query parameters are write-only and sealed. */
export class WebhooksService {
  constructor(
    private readonly store: Store,
    private readonly secretBox: SecretBox,
    private readonly allowPrivate: boolean,
  ) {}

  async list(scope: TeamScope, query: unknown): Promise<Page<WebhookRecord>> {
    const repo = this.store.repos.alerts;
    return listPage(
      query,
      (limit, offset) => repo.listWebhooks(scope.teamId, limit, offset),
      () => repo.countWebhooks(scope.teamId),
      toRecord,
    );
  }

  async get(scope: TeamScope, id: string): Promise<WebhookRecord> {
    return toRecord(await this.require(scope, id));
  }

  async create(scope: TeamScope, body: unknown): Promise<WebhookRecord> {
    const valid = await this.validate(body);
    const now = new Date();
    const row = this.row(scope, newId(), valid, now, now);
    await this.store.repos.alerts.putWebhook(row);
    return toRecord(row);
  }

  /** A full replace: headers and query parameters not given are removed. */
  async replace(scope: TeamScope, id: string, body: unknown): Promise<WebhookRecord> {
    const existing = await this.require(scope, id);
    const valid = await this.validate(body);
    const row = this.row(scope, existing.id, valid, existing.createdAt, new Date());
    await this.store.repos.alerts.putWebhook(row);
    return toRecord(row);
  }

  async delete(scope: TeamScope, id: string): Promise<void> {
    await this.store.transaction(async (repos) => {
      const existing = await this.require(scope, id, repos.alerts);
      const users = await repos.alerts.alertsUsingWebhook(existing.id);
      if (users > 0) {
        throw new ConflictError(
          'SLUICE_ERR_WEBHOOK_IN_USE',
          `Webhook is used by ${users} alert${users === 1 ? '' : 's'}: delete or change them first`,
        );
      }
      await repos.alerts.deleteWebhook(existing.id);
    });
  }

  /** The webhook with its write-only parts, for sending notifications. */
  async forDelivery(teamId: string, id: string) {
    const row = await this.store.repos.alerts.getWebhook(teamId, id);
    if (!row) return undefined;
    const secrets = row.secrets
      ? this.secretBox.openJson<{ headers?: Record<string, string>; queryParams?: Record<string, string> }>(
          row.secrets,
          SEALED_CONTEXT.webhook(row.id),
        )
      : {};
    return { ...toRecord(row), headers: secrets.headers ?? {}, queryParams: secrets.queryParams ?? {} };
  }

  private async validate(body: unknown): Promise<WebhookBody> {
    const problems = checkBody(body);
    const url = (body as { url?: unknown } | undefined)?.url;
    if (typeof url === 'string' && problems.every((p) => p.path !== 'url')) {
      const problem = await webhookUrlProblem(url, this.allowPrivate);
      if (problem) problems.push({ path: 'url', message: problem });
    }
    if (problems.length) throw new ValidationError(problems);
    return body as WebhookBody;
  }

  private row(scope: TeamScope, id: string, body: WebhookBody, createdAt: Date, updatedAt: Date): WebhookRow {
    const secrets =
      body.headers || body.queryParams
        ? this.secretBox.sealJson(
            { headers: body.headers, queryParams: body.queryParams },
            SEALED_CONTEXT.webhook(id),
          )
        : null;
    return {
      id,
      teamId: scope.teamId,
      name: body.name,
      url: body.url,
      description: body.description ?? null,
      body: body.body ?? null,
      secrets,
      createdAt,
      updatedAt,
    };
  }

  private async require(scope: TeamScope, id: string, repo = this.store.repos.alerts): Promise<WebhookRow> {
    const row = isId(id) ? await repo.getWebhook(scope.teamId, id) : undefined;
    if (!row) throw new AreaNotFoundError('Webhook');
    return row;
  }
}

function toRecord(row: WebhookRow): WebhookRecord {
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    description: row.description,
    body: row.body,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
