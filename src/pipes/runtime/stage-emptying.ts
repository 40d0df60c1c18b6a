import type { Logger } from 'pino';
import { mapLimited } from '../../concurrency.js';
import { ENGINE_CODES, type Engine, EngineError } from '../../engine/index.js';
import { STAGE_STATEMENTS } from './ready-stages.js';
import { stageTable } from './stages.js';

/**
 * Empties staging tables (`TRUNCATE`, a few side by side). For each part it takes, a move leaves
 * an empty part in its stage (the engine's mark of the range it removed); a stage never merges,
 * so those would pile up, one more with every batch, and every later move would carry all of them
 * into the destination (and a partition long gone from the source, for a partitioned table).
 */
export async function emptyTables(engine: Engine, stages: readonly string[]): Promise<void> {
  await mapLimited(stages, STAGE_STATEMENTS, (stage) =>
    engine.execute(`TRUNCATE TABLE ${stageTable(stage)}`),
  );
}

/**
 * A run's emptying of the stages its batches moved out of, after each batch's commit and off its
 * path (batch.ts): a one-off pipe's last batch is not held up by it (its stages are dropped once
 * it completes), nor a stream's next claim. The slot's next batch waits for it before it touches
 * the stages, and empties them itself when it failed.
 */
export class StageEmptying {
  private readonly pending = new Map<number, Promise<boolean>>();

  constructor(
    private readonly engine: Engine,
    private readonly logger: Logger,
  ) {}

  /** Starts emptying `stages` of `slot` (the ones its last batch moved parts out of). */
  start(slot: number, pipeId: string, stages: readonly string[]): void {
    const emptied = emptyTables(this.engine, stages).then(
      () => true,
      (error: unknown) => {
        // Dropped meanwhile (the pipe completed or was deleted, its stages went): nothing to empty.
        const gone = error instanceof EngineError && error.code === ENGINE_CODES.UNKNOWN_TABLE;
        this.logger[gone ? 'debug' : 'warn'](
          { err: error, pipeId, slot },
          "emptying a slot's stages after its batch's moves failed: its next batch empties them first",
        );
        return false;
      },
    );
    this.pending.set(slot, emptied);
  }

  /**
   * Waits for the slot's emptying, if one was started since its last batch began: true when its
   * stages are empty now, false when the emptying failed, undefined when none was started.
   */
  async settled(slot: number): Promise<boolean | undefined> {
    const emptied = this.pending.get(slot);
    this.pending.delete(slot);
    return emptied;
  }

  /**
   * Waits for every emptying under way: a run ends only after them, or one landing late could
   * empty a stage the pipe's next run (a start right after a stop) has read a batch into.
   */
  async settleAll(): Promise<void> {
    await Promise.all(this.pending.values());
  }
}
