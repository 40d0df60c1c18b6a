import type { Logger } from 'pino';
import { backoffDelay } from '../../backoff.js';
import { Periodic } from '../../concurrency.js';
import type { EngineRegistry } from '../../engine/index.js';
import { codeOf } from '../../errors.js';
import type { Store } from '../../store/index.js';
import type { PipesService } from '../pipes-service.js';
import type { ClaimedCleanup, RuntimeView } from '../runtime-port.js';
import { type CleanupContext, cleansUpOnDelete } from '../sources/index.js';
import { dropStages } from './stages.js';

/**
 * How often every node looks for cleanups that are due; the first retry comes up to this long
 * after a failed attempt, each later one up to twice as long after, up to RETRY_MAX_MS (each wait
 * jittered down by up to half, src/backoff.ts, so nodes that failed together do not retry together).
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
 * makes the server keep its WAL for as long as it exists), and drops their staging tables. The
 * delete keeps the pipe in the store for this (PipesService.delete); the first attempt is made at
 * once, and a source that cannot be reached or refuses is tried again with backoff by every node
 * that runs pipes (one attempt at a time), after restarts too, until it answers or for a week.
 *
 * Not covered: a worker of another node still setting the pipe up when the delete lands can make
 * its slot after this dropped it (its node stops the worker within a sweep, gone-pipes.ts, not at once).
 */
export class SourceCleanups {
  private readonly sweeps = new Periodic(CLEANUP_SWEEP_MS, () => this.sweep());
  private closed = false;

  constructor(
    private readonly deps: {
      store: Store;
      pipes: PipesService;
      engines: EngineRegistry;
      logger: Logger;
      contextFor(pipe: { id: string; organizationId: string }): CleanupContext;
    },
  ) {}

  start(): void {
    this.sweeps.start();
  }

  /** No attempt starts from now on; the one under way ends (its lease covers one cut short). */
  async close(): Promise<void> {
    this.closed = true;
    await this.sweeps.stop();
  }

  /** Attempts every cleanup that is due. */
  async sweep(): Promise<void> {
    try {
      const due = await this.deps.store.repos.cleanups.due(new Date(), 20);
      for (const pipeId of due) {
        if (this.closed) return;
        await this.attempt(pipeId);
      }
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'could not look for the source cleanups of deleted pipes');
    }
  }

  /** One attempt at a deleted pipe's cleanup, when it is due (at once, `atDelete`); never throws. */
  async attempt(pipeId: string, options: { atDelete?: boolean } = {}): Promise<void> {
    const { pipes, logger } = this.deps;
    let claimed: ClaimedCleanup | undefined;
    try {
      claimed = await pipes.claimCleanup(pipeId, { leaseMs: LEASE_MS, evenIfNotDue: options.atDelete });
    } catch (error) {
      // The store failed: the cleanup stays, and is taken again (once its lease ends, if it was taken).
      logger.warn({ pipeId, err: error }, 'could not take the source cleanup of a deleted pipe');
      return;
    }
    if (!claimed) return;
    let view: RuntimeView | undefined;
    try {
      view = await claimed.open();
      await this.dropStagesOf(view);
      const connector = this.deps.pipes.kinds.connectorFor(view.row.sourceKind);
      if (connector && cleansUpOnDelete(connector))
        await connector.deleted(view.config, this.deps.contextFor(view.row));
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const code = codeOf(error) ?? 'SLUICE_ERR_INTERNAL';
      await this.failed(pipeId, claimed, view ? view.redact(message) : message, code);
      return;
    }
    await this.settle(pipeId, () => this.deps.store.repos.cleanups.done(pipeId));
    if (claimed.attempts > 1)
      logger.info({ pipeId, attempts: claimed.attempts }, "a deleted pipe's source is clean");
  }

  /** The next attempt is due after a backoff, or, a week after the delete, none is. */
  private async failed(pipeId: string, claimed: ClaimedCleanup, reason: string, code: string): Promise<void> {
    const { store, logger } = this.deps;
    if (Date.now() - claimed.since.getTime() >= GIVE_UP_MS) {
      logger.error(
        { pipeId, attempts: claimed.attempts, code },
        `gave up giving back what a pipe deleted a week ago holds at its source: ${reason}`,
      );
      await this.settle(pipeId, () => store.repos.cleanups.done(pipeId));
      return;
    }
    const retryMs = backoffDelay({
      attempt: claimed.attempts,
      baseMs: CLEANUP_SWEEP_MS,
      maxMs: RETRY_MAX_MS,
    });
    logger.warn(
      { pipeId, attempts: claimed.attempts, retryInSeconds: retryMs / 1000, code },
      `a deleted pipe's source still holds what the pipe made there: ${reason}`,
    );
    const next = new Date(Date.now() + retryMs);
    await this.settle(pipeId, () => store.repos.cleanups.failed(pipeId, claimed.leaseUntil, next, reason));
  }

  /** Writes an attempt's outcome; a store that fails leaves the cleanup to be taken again. */
  private async settle(pipeId: string, write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (error) {
      this.deps.logger.warn({ pipeId, err: error }, 'could not record the source cleanup of a deleted pipe');
    }
  }

  /** Staging tables are the engine's: dropping them never waits on the source. */
  private async dropStagesOf(view: RuntimeView): Promise<void> {
    const { engines, logger } = this.deps;
    await dropStages(engines.ownEngineFor(view.service), view.row.id).catch((error: unknown) =>
      logger.warn({ pipeId: view.row.id, err: error }, 'could not drop the staging tables of a deleted pipe'),
    );
  }
}
