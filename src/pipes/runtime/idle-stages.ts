import type { Logger } from 'pino';
import type { Engine } from '../../engine/index.js';
import type { BatchContext } from './batch.js';
import { forgetStages } from './ready-stages.js';
import { dropStages } from './stages.js';

/** How long a run goes without a batch before its staging tables are dropped (IdleStages). */
export const IDLE_STAGES_MS = 60_000;

/**
 * A run's staging tables while its source has nothing to read: dropped once the run had no batch
 * for `idleMs`. Every MergeTree table costs its engine background work and memory, empty or not:
 * 1,000 idle pipes' 3,000 stages took the service's engine from 0.010 to 0.060 of a core and the
 * node from 538 to 774 MB (bench/idle-pipes.ts). The next batch makes them anew, as a run's
 * first does (ready-stages.ts), at the cost of a few statements.
 */
export class IdleStages {
  private lastBatchAt = performance.now();
  private held = true;

  constructor(private readonly idleMs: number) {}

  /** A batch runs now, in stages of its slot. */
  used(): void {
    this.held = true;
    this.lastBatchAt = performance.now();
  }

  /** Whether the run's stages (if it has any) saw no batch for `idleMs`. */
  due(): boolean {
    return this.held && performance.now() - this.lastBatchAt >= this.idleMs;
  }

  /**
   * With no batch in flight: drops the pipe's stages and forgets that they were checked
   * (forgetStages), so the next batch makes them anew. A drop that fails is logged and left
   * to that batch, which finds what is left and makes it anew.
   */
  async drop(engine: Engine, pipeId: string, context: BatchContext, logger: Logger): Promise<void> {
    this.held = false;
    forgetStages(context);
    try {
      await dropStages(engine, pipeId);
    } catch (error) {
      logger.warn({ err: error, pipeId }, 'dropping the staging tables of an idle pipe failed');
    }
  }
}
