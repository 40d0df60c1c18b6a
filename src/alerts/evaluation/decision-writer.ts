import type { HistoryRow, OutboxRow, Store } from '../../store/index.js';
import type { AlertsService } from '../alerts-service.js';
import type { AlertMetrics } from '../metrics.js';

/** A notification as the outbox takes it (src/store/evaluation-repo.ts). */
export type OutboxNotice = Pick<
  OutboxRow,
  'alertId' | 'teamId' | 'webhookId' | 'idempotencyKey' | 'variables'
>;

/** What evaluating one alert's windows decided: its state after them, its history, its notices. */
export interface Decision {
  alertId: string;
  state: string;
  until: Date;
  history: HistoryRow[];
  notices: OutboxNotice[];
  notifiedAt: Date;
}

/** The most decisions one transaction carries, so a statement's arrays stay a bounded size. */
const MOST_PER_WRITE = 5_000;

/**
 * Writes a tick's decisions in as few transactions as the tick allows. The first tile's decisions
 * are written at once; the tiles decided while that transaction runs gather and go together in the
 * next one, each transaction three statements (states, history, notifications) whatever the number
 * of alerts. The store runs on the event loop's thread (embedded PGlite), where a statement costs a
 * few milliseconds on top of its rows: written a tile at a time, 100 tiles' transactions were a
 * quarter of a tick (bench/alerts.ts).
 *
 * A failed write fails the tick (`done()` throws it, the evaluator logs it): the decisions it held
 * and those after it are not written, so their windows are evaluated again on the next tick, as a
 * tick that failed part-way always did.
 */
export class DecisionWriter {
  private pending: Decision[] = [];
  private writing: Promise<void> | undefined;
  private failure: { error: unknown } | undefined;

  constructor(
    private readonly options: { store: Store; alerts: Pick<AlertsService, 'forget'>; metrics?: AlertMetrics },
    private readonly now: Date,
  ) {}

  add(decisions: Decision[]): void {
    if (this.failure) return;
    this.pending.push(...decisions);
    this.writing ??= this.drain();
  }

  /** Resolves when every decision added is written; throws what a write failed with. */
  async done(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.failure) throw this.failure.error;
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.length > 0) await this.write(this.pending.splice(0, MOST_PER_WRITE));
    } catch (error) {
      this.failure = { error };
      this.pending = [];
    } finally {
      this.writing = undefined;
    }
  }

  private async write(decisions: Decision[]): Promise<void> {
    const kept = await this.options.store.transaction(async (repos) => {
      // Alerts deleted meanwhile keep no history and send nothing.
      const present = await repos.evaluation.setEvaluatedMany(
        decisions.map((d) => ({
          id: d.alertId,
          state: d.state,
          until: d.until,
          notifiedAt: d.notices.length > 0 ? d.notifiedAt : null,
        })),
      );
      const still = decisions.filter((d) => present.has(d.alertId));
      // Their rows are locked by the update until this commits: no existence check (evaluation-repo.ts).
      await repos.evaluation.addHistoryOfUpdated(still.flatMap((d) => d.history));
      await repos.outbox.add(
        still.flatMap((d) => d.notices),
        this.now,
      );
      return still;
    });
    for (const decision of kept) this.options.metrics?.decisions.inc({ state: decision.state });
    this.options.alerts.forget(decisions.map((d) => d.alertId));
  }
}
