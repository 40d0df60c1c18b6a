import type pg from 'pg';
import { PermanentError } from '../../../records/index.js';
import type { RunContext, SourceLag } from '../../contract.js';
import type { TablePlan } from '../catalog/index.js';
import { missingTables, tableGone } from '../catalog/index.js';
import { type SlotState, slotFix, slotProblem, slotState } from '../changes/index.js';
import { endedWait, ownedNames, type PostgresSource, waitEnded } from '../session/index.js';
import { type RowCount, TargetRowCounts } from '../target/index.js';

/** How often a run looks at its source and counts its targets. */
const EVERY_MS = 10_000;

/**
 * What a run keeps an eye on while it lasts, every EVERY_MS on its metadata session: the slot's lag
 * and WAL status and the targets' live rows, for `/status`; and whether the slot and every mapped
 * table are still there. A slot the server invalidates during a long snapshot, or a DROP TABLE
 * (pgoutput says nothing of it), would otherwise go unnoticed until much later: the run's next
 * claim throws what was found (`throwIfFailed`).
 */
export class SourceWatch {
  /** The slot as last measured, undefined when unknown. */
  slot: SlotState | undefined;
  private failure: Error | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly counts: TargetRowCounts;

  constructor(
    private readonly context: RunContext,
    private readonly source: PostgresSource,
    private readonly meta: pg.Client,
  ) {
    this.counts = new TargetRowCounts(context.target, context.logger.child({ pipeId: context.pipeId }));
  }

  /**
   * Looks now and every EVERY_MS, at the run's slot and plans as they are then; `onlySnapshot`
   * tells the targets that hold nothing but rows of their snapshot (target/target-row-counts.ts).
   */
  start(
    slot: () => string | null,
    plans: () => Iterable<TablePlan>,
    onlySnapshot: (plan: TablePlan) => boolean,
  ): void {
    const look = () =>
      void Promise.all([this.measure(slot(), [...plans()]), this.counts.refresh(plans(), onlySnapshot)]);
    this.timer = setInterval(look, EVERY_MS);
    look();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Bytes of WAL the slot holds, as last measured; undefined while unknown. */
  lag(): SourceLag | undefined {
    const bytes = this.slot?.lagBytes;
    return bytes === undefined || bytes === null ? undefined : { total: bytes, parts: {} };
  }

  throwIfFailed(): void {
    if (this.failure) throw this.failure;
  }

  rowsOf(table: string): RowCount | undefined {
    return this.counts.get(table);
  }

  /**
   * What ends a run whose stream could not start: when the slot is gone or invalidated, a
   * PermanentError saying how to bring the pipe back (the stream's error its cause), else `error`.
   */
  async streamFailure(slot: string, error: unknown): Promise<unknown> {
    const { pipeId, logger } = this.context;
    const problem = await slotState(this.meta, slot).then(
      (state) => this.slotProblem(slot, state),
      (failure: unknown) => {
        logger.warn({ pipeId, err: failure }, 'could not ask after the slot');
        return undefined;
      },
    );
    if (!problem) return error;
    logger.warn({ pipeId, err: error }, 'the replication stream could not start: the slot is unusable');
    return new PermanentError('SLUICE_ERR_SOURCE_SETUP', problem, { cause: error });
  }

  /** Why `slot` can never stream again (gone, invalidated), in words that say what to do. */
  slotProblem(slot: string, state: SlotState | undefined): string | undefined {
    const mode = this.source.settings?.replicationMode ?? 'cdc';
    const owned = slot === ownedNames(this.context.pipeId).slot;
    return slotProblem(slot, state, slotFix(mode, owned));
  }

  private async measure(slot: string | null, plans: TablePlan[]): Promise<void> {
    const { pipeId, logger } = this.context;
    if (slot) {
      try {
        this.slot = await slotState(this.meta, slot);
        const problem = this.slotProblem(slot, this.slot);
        if (problem) this.failure ??= new PermanentError('SLUICE_ERR_SOURCE_SETUP', problem);
      } catch (error) {
        this.slot = undefined;
        this.failIfUnanswered(error);
        logger.warn({ pipeId, err: error }, 'could not measure the slot');
      }
    }
    try {
      const [gone] = await missingTables(
        this.meta,
        plans.map((plan) => plan.source),
      );
      if (gone) this.failure ??= tableGone(gone.schema, gone.table);
    } catch (error) {
      this.failIfUnanswered(error);
      logger.warn({ pipeId, err: error }, 'could not check that the mapped tables are still there');
    }
  }

  /** A query the server never answered: the session is lost, the run begins again on a new one. */
  private failIfUnanswered(error: unknown): void {
    if (endedWait(error) === 'answer') this.failure ??= waitEnded(error);
  }
}
