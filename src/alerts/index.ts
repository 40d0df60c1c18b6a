export { AlertsService } from './alerts-service.js';
export { AreaNotFoundError, type Page, type TeamScope } from './context.js';
export { DashboardsService } from './dashboards-service.js';
export { AlertEvaluator } from './evaluation/evaluator.js';
export { luceneToSql } from './lucene.js';
export * as alertSchemas from './schemas.js';
export { SourcesService } from './sources-service.js';
export { isPrivateAddress, webhookUrlProblem } from './webhook-url.js';
export { WebhooksService } from './webhooks-service.js';
