import type { Logger } from 'pino';
import { Periodic } from '../../concurrency.js';
import type { Store } from '../../store/index.js';

/** How often a node looks for pipes deleted under the workers it runs (GonePipes). */
export const GONE_SWEEP_MS = 10_000;

/**
 * Stops the workers of pipes deleted under them: by another node, or by a delete that raced a
 * PATCH which started a worker after the delete had stopped the old one (PipesService.delete stops
 * the worker it knows of). One query a sweep for all of the node's workers: a run used to learn it
 * by reading its progress row at every poll, which 1,000 idle pipes did 33 times a second
 * (bench/idle-pipes.ts). Such a worker also fails at its next claim, whose rows need the pipe's.
 */
export class GonePipes {
  private readonly sweeps = new Periodic(GONE_SWEEP_MS, () => this.sweep());

  constructor(
    private readonly deps: {
      store: Store;
      logger: Logger;
      /** The pipes this node runs a worker for now. */
      running(): Iterable<string>;
      /** Stops a pipe's worker and waits for it (its batch in flight ends first). */
      stop(pipeId: string): Promise<void>;
    },
  ) {}

  start(): void {
    this.sweeps.start();
  }

  async close(): Promise<void> {
    await this.sweeps.stop();
  }

  /** Stops the workers whose pipe is gone; never throws. */
  async sweep(): Promise<void> {
    const { store, logger } = this.deps;
    try {
      const gone = await store.repos.pipes.missing([...this.deps.running()]);
      await Promise.all(
        gone.map(async (pipeId) => {
          logger.info({ pipeId }, 'a pipe was deleted under its worker; the worker stops');
          await this.deps.stop(pipeId);
        }),
      );
    } catch (error) {
      logger.warn({ err: error }, 'could not look for pipes deleted under their workers');
    }
  }
}
