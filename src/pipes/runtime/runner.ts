import { sleep } from '../../concurrency.js';
import type { Engine } from '../../engine/index.js';
import type { Failpoint } from '../../failpoints.js';
import type { Batch, Store } from '../../store/index.js';
import type { ProducingReader } from '../records/index.js';
import {
  explainsCompletion,
  limitsInFlight,
  ownsItsStates,
  type RunContext,
  reportsLag,
  type SourceConnector,
  type SourceRun,
  tracksCommits,
  wantsNoStagesAhead,
  writesSeveralTables,
} from '../sources/index.js';
import { type BatchContext, completeBatch } from './batch.js';
import { prepareDestinations } from './destination.js';
import { EarlyStages } from './early-stages.js';
import { batchEvent } from './history-stage.js';
import { IDLE_STAGES_MS, IdleStages } from './idle-stages.js';
import { readyStages } from './ready-stages.js';
import type { RunnerProgress } from './run-progress.js';
import { StageEmptying } from './stage-emptying.js';

/** States a pipe's worker runs in before its source ingests (a database pipe's setup and snapshot). */
const STARTING = ['Provisioning', 'Degraded', 'Running', 'Resync', 'Setup', 'Snapshot'];

export interface RunnerContext extends RunContext {
  /** The pipe's progress: the source's port, and the runtime's claims (run-progress.ts). */
  progress: RunnerProgress;
  /** The service's engine, the runtime's alone: stages, moves, and the loads of `read`'s sink. */
  engine: Engine;
  /** The service's source reader, which the loads of `read`'s sink stream from (records/stream-load.ts). */
  sourceReader: ProducingReader;
  /** The runtime's own: claims, stages and commits (the source sees only `progress`). */
  store: Store;
  /** The source while it is open (its status joins the pipe's), undefined once closed. */
  opened?(source: SourceRun | undefined): void;
  /** A batch committed (its rows and source bytes counted), for the pipe's rates. */
  committed?(batch: Batch): void;
  /** A test's failpoint (src/failpoints.ts): told of each step a batch passes. */
  failpoint?: Failpoint;
  /**
   * Throws while the service is over its disk quota (DiskQuotaError): the run ends before it claims
   * anything more, and the pipe waits, Degraded, for space.
   */
  checkDisk?(): Promise<void>;
  /**
   * What the pipe's batches share with other pipes (a service's PostgreSQL pipes: one batch per core
   * of its pipesCdcScaling, cdc-capacity.ts): a permit is held from before a claim to the commit.
   */
  permits?: { acquire(signal: AbortSignal): Promise<() => void> };
  /** The pipe's history (src/pipes/history): each batch's row staged and moved with it. */
  history?: { days: number; pipeName: string };
  /** How long the run goes without a batch before its stages are dropped (idle-stages.ts). */
  idleStagesMs?: number;
}

/**
 * Runs one pipe on its source's connector with the exactly-once protocol (batch.ts): up to
 * `scaling.replicas` batches in flight, each in a worker slot with staging tables of its own.
 * Batches claimed before a stop or a crash are finished first; then the connector is asked for
 * the next range after the cursor, until it says a one-off source is complete or the pipe stops.
 */
export async function runPipe(connector: SourceConnector, context: RunnerContext): Promise<void> {
  const { config, engine, store, pipeId, signal } = context;
  // The state the pipe is in, as this run moved it, for its history's rows.
  let state = context.startedIn;
  // The source reader loads every batch: its process starts while the source opens (a Kafka
  // pipe joins its group), not when the first batch is loaded. A failure here is the first
  // batch's to meet and report.
  context.sourceReader.warm().catch((error: unknown) => {
    context.logger.warn({ err: error, pipeId }, 'the source reader did not start ahead of the first batch');
  });
  const source = await connector.open({
    ...context,
    setState: async (to, reason, from, code) => {
      const moved = await context.setState(to, reason, from, code);
      if (moved) state = to;
      return moved;
    },
  });
  context.opened?.(source);
  try {
    // First, so a failure of anything below is recorded where the status shows it (lastError).
    await context.progress.ensure(source.firstCursor);
    const tables = () => (writesSeveralTables(source) ? source.tables : undefined);
    let destinations = await prepareDestinations(engine, config, tables());
    let preparedFor = tables();
    // A source may change the tables it writes between claims (a database pipe swaps in the
    // tables its resync filled): the next batch goes to the new ones, made when missing.
    const prepareIfChanged = async () => {
      if (tables() === preparedFor) return;
      destinations = await prepareDestinations(engine, config, tables());
      preparedFor = tables();
    };
    const inFlight = () => (limitsInFlight(source) ? source.inFlight : (config.scaling.replicas ?? 1));
    const slots = new Slots();
    const batchContext: BatchContext = {
      engine,
      sourceReader: context.sourceReader,
      store,
      stagesChecked: new Map<number, string>(),
      freshStages: new Set<number>(),
      stagesCheckedAt: new Map(),
      emptying: new StageEmptying(engine, context.logger),
      logger: context.logger,
      failpoint: context.failpoint,
      ...(context.history && {
        history: {
          days: context.history.days,
          event: (b, staged) =>
            batchEvent(
              { pipeId, pipeName: context.history?.pipeName ?? '', state },
              reportsLag(source) ? source.lag() : undefined,
              b,
              staged,
            ),
        },
      }),
    };
    const unfinished = await context.progress.openBatches();
    // A run's first claim goes to slot 0: its stages are made beside the source's first fetch and
    // flush when that is slow, rather than after the claim (early-stages.ts). Only a slot no
    // unfinished batch holds (that batch's stages are its own); a failure here leaves them to the
    // batch, which makes them and reports it.
    const checkedFor = destinations;
    const early = new EarlyStages(() =>
      readyStages(batchContext, checkedFor, { pipeId, slot: 0, staged: false }).then(
        () => batchContext.stagesCheckedAt?.set(0, { at: performance.now(), destinations: checkedFor }),
        (error: unknown) =>
          context.logger.warn(
            { err: error, pipeId },
            "making slot 0's stages ahead of its first batch failed",
          ),
      ),
    );
    if (unfinished.some((b) => b.slot === 0) || wantsNoStagesAhead(source)) early.skip();
    const idle = new IdleStages(context.idleStagesMs ?? IDLE_STAGES_MS);
    const run = (batch: Batch, release?: () => void) =>
      slots.run(batch.slot, async () => {
        idle.used();
        try {
          if (batch.slot === 0) await early.settled();
          const done = await completeBatch(batchContext, destinations, batch, (b, sink) =>
            source.read(b, sink),
          );
          context.committed?.(done);
          if (tracksCommits(source)) await source.committed(done);
        } finally {
          idle.used();
          release?.();
        }
      });
    try {
      for (const batch of unfinished) run(batch, await context.permits?.acquire(signal));
      // A source with phases of its own (a database pipe's snapshot) moves the pipe itself.
      if (!ownsItsStates(source) && (await context.setState('Running', 'ingesting', STARTING)))
        state = 'Running';
      while (!signal.aborted) {
        let answer: 'claimed' | 'idle' | 'complete' = 'idle';
        for (let slot = slots.free(inFlight()); slot !== undefined; slot = slots.free(inFlight())) {
          await context.checkDisk?.();
          const release = await context.permits?.acquire(signal);
          let batch: Batch | undefined;
          try {
            // The cursor as this run left it (run-progress.ts): an idle poll asks the store nothing.
            const next = await early.answer(source.next(await context.progress.cursor()));
            if (next === 'idle' || next === 'complete') {
              if (answer !== 'claimed') answer = next;
              break;
            }
            await prepareIfChanged();
            batch = await context.progress.claim(slot, next);
          } finally {
            // Nothing claimed: the permit goes back at once; a claimed batch keeps it to its commit.
            if (!batch) release?.();
          }
          context.failpoint?.('claimed', batch);
          run(batch, release);
          answer = 'claimed';
        }
        if (slots.busy()) {
          // A free slot whose source had nothing ready asks again after pollMs, not only when a
          // running batch ends: a stream's next batch fills while the last one is written.
          if (slots.free(inFlight()) === undefined) {
            await slots.next();
            continue;
          }
          const wake = new AbortController();
          try {
            await slots.next(sleep(source.pollMs, AbortSignal.any([signal, wake.signal])));
          } finally {
            wake.abort(); // the poll's timer and listener go when a slot finished first
          }
          continue;
        }
        if (answer === 'claimed') continue;
        if (answer === 'complete') {
          const why = explainsCompletion(source) ? source.completion : 'every file ingested';
          if (await context.setState('Completed', why, ['Running', 'Snapshot'])) state = 'Completed';
          return;
        }
        // Nothing in flight and nothing to read: stages idle for long go (made anew for the next).
        if (idle.due()) {
          await Promise.all([early.settled(), batchContext.emptying.settleAll()]);
          await idle.drop(engine, pipeId, batchContext, context.logger);
        }
        await sleep(source.pollMs, signal);
      }
    } finally {
      // No batch may outlive its worker: a restarted worker would run it twice at once. Nor may
      // slot 0's early stages: a restarted worker's would be made beside them.
      await Promise.all([slots.settle(), early.settled()]);
      await batchContext.emptying.settleAll();
    }
  } finally {
    context.opened?.(undefined);
    await source.close();
  }
}

/** The worker slots of a pipe: which run a batch, and the first failure among them. */
class Slots {
  private readonly running = new Map<number, Promise<void>>();
  private failure: unknown;

  run(slot: number, work: () => Promise<void>): void {
    const done = work()
      .catch((error) => {
        this.failure ??= error;
      })
      .finally(() => this.running.delete(slot));
    this.running.set(slot, done);
  }

  /** The lowest slot below `count` that runs nothing, or undefined when all are busy. */
  free(count: number): number | undefined {
    this.rethrow();
    for (let slot = 0; slot < count; slot += 1) if (!this.running.has(slot)) return slot;
    return undefined;
  }

  busy(): boolean {
    return this.running.size > 0;
  }

  /** Waits for any slot to finish (or `orElse` to resolve); throws the first failure of any. */
  async next(orElse?: Promise<void>): Promise<void> {
    await Promise.race([...this.running.values(), ...(orElse ? [orElse] : [])]);
    this.rethrow();
  }

  async settle(): Promise<void> {
    await Promise.allSettled(this.running.values());
  }

  private rethrow(): void {
    if (this.failure !== undefined) throw this.failure;
  }
}
