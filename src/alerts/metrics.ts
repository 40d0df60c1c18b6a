import { Counter, type Registry } from 'prom-client';

/**
 * What alerting does, counted by outcome for /metrics: windows evaluated (or failed), decisions by
 * the state reached, the queries run, and webhook calls by how they ended. No alert or team in a label: /metrics
 * needs no credentials.
 */
export class AlertMetrics {
  readonly windows: Counter<'outcome'>;
  readonly decisions: Counter<'state'>;
  readonly deliveries: Counter<'outcome'>;
  readonly queries: Counter<'kind'>;

  constructor(registry?: Registry) {
    const registers = registry ? [registry] : [];
    this.windows = new Counter({
      name: 'sluice_alert_windows_evaluated_total',
      help: 'Alert windows evaluated, by outcome (evaluated, or failed: the query failed)',
      labelNames: ['outcome'],
      registers,
    });
    this.decisions = new Counter({
      name: 'sluice_alert_decisions_total',
      help: 'Alert windows decided, by the state the alert reached (ALERT or OK)',
      labelNames: ['state'],
      registers,
    });
    this.deliveries = new Counter({
      name: 'sluice_webhook_deliveries_total',
      help: 'Webhook calls for notifications, by outcome (delivered, retried, failed)',
      labelNames: ['outcome'],
      registers,
    });
    this.queries = new Counter({
      name: 'sluice_alert_queries_total',
      help: "Queries alert evaluation ran, by kind (scan: several tiles' alerts read in one query; tile: one tile's)",
      labelNames: ['kind'],
      registers,
    });
  }
}
