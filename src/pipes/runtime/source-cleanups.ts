import type { Logger } from 'pino';
import type { Store } from '../../store/index.js';
import type { PipesService } from '../pipes-service.js';
import type { RuntimeView } from '../runtime-port.js';
import { type CleanupContext, connectorFor } from '../sources/index.js';

/**
 * How often every node looks for cleanups that are due; the first retry comes this long after a
 * failed attempt, each later one twice as long after, up to RETRY_MAX_MS.
 */
export const CLEANUP_SWEEP_MS = 10_000;
const RETRY_MAX_MS = 10 * 60_000;
/**
 * An attempt holds its cleanup this long (no other node takes it meanwhile): longer than any
 * attempt (a database pipe's: a 10 s connect, then statements of at most 60 s each), short enough
 * that the cleanup of a node that crashed mid-attempt is not held up for long.
 */
const LEASE_MS = 3 * 60_000;
/** A source that has not answered for this long after the delete is left for its owner to clean. */
const GIVE_UP_MS = 7 * 24 * 3_600_000;

/**
 * Gives back what deleted pipes hold at their sources (a database pipe's replication slot, which
 * makes the server keep its WAL for as long as it exists). The delete keeps the pipe in the store
 * for this (PipesService.delete); the first attempt is made at once, and a source that cannot be
 * reached or refuses is tried again with backoff from every node (one at a time), after restarts
 * too, until it answers or for a week.
 */
export class SourceCleanups {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      store: Store;
      pipes: PipesService;
      logger: Logger;
      contextFor(pipe: { id: string; organizationId: string }): CleanupContext;
    },
  ) {}

  start(): void {
    this.timer ??= setInterval(() => {
      this.sweeping ??= this.sweep().finally(() => (this.sweeping = undefined));
    }, CLEANUP_SWEEP_MS);
    this.timer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.sweeping;
  }

  /** Attempts every cleanup that is due. */
  async sweep(): Promise<void> {
    try {
      const due = await this.deps.store.repos.cleanups.due(new Date(), 20);
      for (const pipeId of due) await this.attempt(pipeId);
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'could not look for the source cleanups of deleted pipes');
    }
  }

  /**
   * One attempt at a deleted pipe's cleanup, when it is due (at once, `atDelete`); returns the
   * pipe as it was when it was taken; never throws.
   */
  async attempt(pipeId: string, options: { atDelete?: boolean } = {}): Promise<RuntimeView | undefined> {
    const { store, pipes, logger } = this.deps;
    try {
      const claimed = await pipes.claimCleanup(pipeId, { leaseMs: LEASE_MS, evenIfNotDue: options.atDelete });
      if (!claimed) return undefined;
      const connector = connectorFor(claimed.row.sourceKind);
      try {
        await connector?.deleted?.(claimed.config, this.deps.contextFor(claimed.row));
      } catch (error) {
        const reason = claimed.redact(error instanceof Error ? error.message : String(error));
        if (Date.now() - claimed.since.getTime() >= GIVE_UP_MS) {
          logger.error(
            { pipeId, attempts: claimed.attempts },
            `gave up giving back what a pipe deleted a week ago holds at its source: ${reason}`,
          );
          await store.repos.cleanups.done(pipeId);
          return claimed;
        }
        const retryMs = Math.min(CLEANUP_SWEEP_MS * 2 ** (claimed.attempts - 1), RETRY_MAX_MS);
        logger.warn(
          { pipeId, attempts: claimed.attempts, retryInSeconds: retryMs / 1000 },
          `a deleted pipe's source still holds what the pipe made there: ${reason}`,
        );
        await store.repos.cleanups.failed(pipeId, new Date(Date.now() + retryMs), reason);
        return claimed;
      }
      await store.repos.cleanups.done(pipeId);
      if (claimed.attempts > 1)
        logger.info({ pipeId, attempts: claimed.attempts }, "a deleted pipe's source is clean");
      return claimed;
    } catch (error) {
      // The store failed: the cleanup stays, and is taken again once its lease ends.
      logger.warn({ pipeId, err: error }, 'could not attempt the source cleanup of a deleted pipe');
      return undefined;
    }
  }
}
