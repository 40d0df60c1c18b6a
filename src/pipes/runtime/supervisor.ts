import { BackoffDelays } from '../../backoff.js';
import { sleep } from '../../concurrency.js';
import { codeOf, type ErrorCode, isRetried, type Problem } from '../../errors.js';
import { failpointFor, type KillAt } from '../../failpoints.js';
import type { Json, Service, Store } from '../../store/index.js';
import type { PipeMinute } from '../history/index.js';
import { type PipeConfig, sourceKindOf } from '../model.js';
import type { PipesService } from '../pipes-service.js';
import type { PipeRuntime } from '../runtime-port.js';
import {
  type CleanupContext,
  explainsRunFailure,
  libraryFailureCode,
  reportsLag,
  reportsLiveStatus,
  type SourceRun,
  type SourceStatus,
  sharesCdcCapacity,
} from '../sources/index.js';
import type { PipeState } from '../state.js';
import type { CdcCapacity } from './cdc-capacity.js';
import { createProblems, definitionProblems } from './create-checks.js';
import { GonePipes } from './gone-pipes.js';
import { HistoryRecorder } from './history-recorder.js';
import { IdleStatuses } from './idle-statuses.js';
import { runProgressOf } from './run-progress.js';
import { runPipe } from './runner.js';
import { SourceAccess, type SourceAccessDeps } from './source-access.js';
import { SourceCleanups } from './source-cleanups.js';
import { targetTablesOf } from './source-ports.js';
import { Throughput } from './throughput.js';
import { updateProblems } from './update-checks.js';
import { removeOldDeduplication } from './upgrades.js';

/** What a running source says of itself; {} from one that says nothing (ReportsLiveStatus). */
function liveStatus(source: SourceRun): SourceStatus {
  return reportsLiveStatus(source) ? source.status() : {};
}

/**
 * The catalog code of a pipe's failure: the error's own, else what its library's fields say (a
 * source's network, TLS, credentials), else SLUICE_ERR_INTERNAL (retried, as any unknown failure).
 */
export function failureCode(error: unknown): ErrorCode {
  return codeOf(error) ?? libraryFailureCode(error) ?? 'SLUICE_ERR_INTERNAL';
}

/** States in which a pipe has a worker. */
export const RUNNING_STATES = ['Provisioning', 'Setup', 'Snapshot', 'Running', 'Degraded', 'Resync'];
/** Waits between runs of a failing pipe's worker: 1 s doubling to 60 s, each jittered (src/backoff.ts). */
const BACKOFF_MS = { first: 1_000, max: 60_000 };

interface Worker {
  controller: AbortController;
  done: Promise<void>;
}

/**
 * Starts a worker for every pipe that should run, after create, start and restart; stops it on
 * stop and delete. State lives in the store, never only here, so a restart resumes each pipe from
 * its last committed checkpoint.
 */
export class PipeSupervisor implements PipeRuntime {
  private readonly workers = new Map<string, Worker>();
  /** The open source of each running pipe, for its status. */
  private readonly sources = new Map<string, SourceRun>();
  /** What each running pipe committed lately (rowsPerSecond, bytesPerSecond in its status). */
  private readonly throughput = new Map<string, Throughput>();
  private readonly idle: IdleStatuses;
  private closing = false;
  private readonly cleanups: SourceCleanups;
  private readonly access: SourceAccess;
  private readonly history: HistoryRecorder;
  private readonly gone: GonePipes;

  constructor(
    private readonly deps: SourceAccessDeps & {
      store: Store;
      pipes: PipesService;
      retry?: { firstMs: number; maxMs: number };
      /** The batches a service's CDC pipes may have in flight together (pipesCdcScaling, SharesCdcCapacity). */
      cdcCapacity?: CdcCapacity;
      /** Tests only: where a batch kills the process (SLUICE_TEST_KILL_AT, src/failpoints.ts). */
      killAt?: KillAt | undefined;
      /** Tests only: how long a pipe goes without a batch before its stages go (idle-stages.ts). */
      idleStagesMs?: number | undefined;
      /** Days of pipe history each service keeps (src/pipes/history). */
      pipeHistoryDays: number;
    },
  ) {
    this.history = new HistoryRecorder({
      ...deps,
      days: deps.pipeHistoryDays,
      view: (pipeId) => deps.pipes.runtimeView(pipeId),
      running: () => this.workers.keys(),
      notRunning: () => deps.pipes.pipesInStates(RUNNING_STATES.filter((state) => state !== 'Running')),
      failed: () => deps.store.repos.progress.failedWithCodes(),
      sample: (pipeId) => {
        const source = this.sources.get(pipeId);
        if (!source) return undefined;
        return {
          lag: reportsLag(source) ? source.lag() : undefined,
          quiet: this.throughput.get(pipeId)?.quiet() ?? true,
        };
      },
    });
    this.cleanups = new SourceCleanups({ ...deps, contextFor: (pipe) => this.cleanupContext(pipe) });
    this.access = new SourceAccess(deps);
    this.idle = new IdleStatuses({ ...deps, contextFor: (pipe) => this.cleanupContext(pipe) });
    this.gone = new GonePipes({ ...deps, running: () => this.workers.keys(), stop: (id) => this.stop(id) });
  }

  /**
   * Puts right the tables an earlier Sluice made (upgrades.ts), resumes every pipe that was running
   * when the process stopped, and gives back what deleted pipes still hold at their sources.
   */
  async start(): Promise<void> {
    await removeOldDeduplication(this.deps);
    this.cleanups.start();
    this.history.start();
    this.gone.start();
    for (const pipeId of await this.deps.pipes.pipesInStates(RUNNING_STATES)) this.changed(pipeId);
  }

  changed(pipeId: string): void {
    this.idle.forget(pipeId);
    if (this.closing || this.workers.has(pipeId)) return;
    const controller = new AbortController();
    const done = this.run(pipeId, controller.signal)
      .catch((error) => this.deps.logger.error({ err: error, pipeId }, 'pipe worker crashed'))
      .finally(() => {
        if (this.workers.get(pipeId)?.controller === controller) this.workers.delete(pipeId);
      });
    this.workers.set(pipeId, { controller, done });
  }

  /** The connector of a configuration's kind, among the kinds this Sluice runs. */
  private connectorOf(config: PipeConfig) {
    return this.deps.pipes.kinds.connectorFor(sourceKindOf(config.source));
  }

  /** Create-time checks against the real source and destination (400s when they fail). */
  async createProblems(
    config: PipeConfig,
    service: Service,
    options: { validateSamples: boolean },
  ): Promise<Problem[]> {
    // A pipe that passes runs at once and loads its first batch through the service's source
    // reader: its process starts beside the checks (an idle engine stops again, SLUICE_ENGINE_IDLE_SECONDS).
    this.deps.engines
      .sourceReaderFor(service)
      .warm()
      .catch((error: unknown) => {
        this.deps.logger.warn({ err: error }, 'the source reader did not start beside the create checks');
      });
    const context = this.access.context(service, options.validateSamples);
    const connector = this.connectorOf(config);
    return this.access.shown(await this.access.answering(createProblems(config, context, connector)));
  }

  /** Checks of a pipe's changed source against the real source (update-checks.ts). */
  async updateProblems(
    before: PipeConfig,
    after: PipeConfig,
    service: Service,
    pipe: { pipeId: string; cursor: Json | null },
  ): Promise<Problem[]> {
    const context = { ...this.access.context(service), ...pipe };
    const connector = this.connectorOf(after);
    return this.access.shown(await this.access.answering(updateProblems(before, after, context, connector)));
  }

  /** Problems of column types and table expressions, read by the service's engine. */
  definitionProblems(
    destination: Pick<PipeConfig['destination'], 'columns' | 'tableDefinition'>,
    service: Service,
  ): Promise<Problem[]> {
    return this.access.answering(definitionProblems(destination, this.deps.engines.engineFor(service)));
  }

  /**
   * What a running pipe says of itself: its rates over the last minute, and what its source adds
   * (ReportsLiveStatus: a stream's offsets and lag); {} when it does not run.
   */
  sourceStatus(pipeId: string): SourceStatus {
    const source = this.sources.get(pipeId);
    if (!source) return {};
    return { ...this.throughput.get(pipeId)?.rates(), ...liveStatus(source) };
  }

  /**
   * What the source of a pipe that does not run says of it (a database pipe's slot and its lag),
   * from its stored cursor (idle-statuses.ts); {} for sources that have nothing to say.
   */
  idleSourceStatus(pipeId: string, cursor: Json | null): Promise<SourceStatus> {
    return this.idle.status(pipeId, cursor);
  }

  /** The last hour of a pipe's history, a minute each (its status's series). */
  async lastHour(pipeId: string): Promise<PipeMinute[]> {
    const view = await this.deps.pipes.runtimeView(pipeId);
    return view ? this.history.lastHour(view) : [];
  }

  /** For the metrics, what the sources of the pipes that do not run said last, never waiting. */
  idleSourceStatuses(): Promise<[pipeId: string, status: SourceStatus][]> {
    return this.idle.statuses((pipeId) => this.sources.has(pipeId));
  }

  /** What a connector is told when it speaks to a pipe's source outside a run. */
  private cleanupContext(pipe: { id: string; organizationId: string }): CleanupContext {
    const { allowPrivateSources, logger } = this.deps;
    return { pipeId: pipe.id, organizationId: pipe.organizationId, allowPrivateSources, logger };
  }

  /** Every running pipe's source status, for the metrics. */
  sourceStatuses(): [pipeId: string, status: SourceStatus][] {
    return [...this.sources].map(([pipeId, source]) => [pipeId, liveStatus(source)]);
  }

  async reload(pipeId: string): Promise<void> {
    if (!this.workers.has(pipeId)) return;
    await this.stop(pipeId);
    this.changed(pipeId);
  }

  async stop(pipeId: string, options: { deleting?: boolean; byRequest?: boolean } = {}): Promise<void> {
    this.idle.forget(pipeId);
    const worker = this.workers.get(pipeId);
    if (worker) {
      worker.controller.abort();
      await worker.done;
    }
    // The rows of the moves it made are written before a stop returns: a delete takes the pipe away.
    await this.history.settledFor(pipeId);
    // The stop command's move to Stopped is the pipes service's, after this: its history row is here.
    if (options.byRequest) await this.history.moved(pipeId, 'Stopped');
    // A deleted pipe's staging tables go, and what it held at its source (a slot, a publication)
    // is given back, or kept for another attempt (source-cleanups.ts).
    if (options.deleting) await this.cleanups.attempt(pipeId, { atDelete: true });
  }

  async close(): Promise<void> {
    this.closing = true;
    this.history.stop();
    const workers = [...this.workers.values()];
    for (const worker of workers) worker.controller.abort();
    await Promise.all([...workers.map((worker) => worker.done), this.cleanups.close(), this.gone.close()]);
    // The engines close after this: the last moves' rows are written first.
    await this.history.settled();
  }

  private async run(pipeId: string, signal: AbortSignal): Promise<void> {
    const retry = this.deps.retry ?? { firstMs: BACKOFF_MS.first, maxMs: BACKOFF_MS.max };
    const delays = new BackoffDelays({ baseMs: retry.firstMs, maxMs: retry.maxMs });
    while (!signal.aborted) {
      try {
        if ((await this.attempt(pipeId, signal)) === 'done') return;
      } catch (error) {
        // The store itself failed (a database blip): the pipe keeps its state and tries again.
        this.deps.logger.warn({ pipeId, err: error }, 'pipe worker could not reach the store; retrying');
      }
      if (signal.aborted) return;
      await sleep(delays.next(), signal);
    }
  }

  /** One run of a pipe's worker: 'done' when it finished or must not run, 'retry' after a failure. */
  private async attempt(pipeId: string, signal: AbortSignal): Promise<'done' | 'retry'> {
    const { pipes, store, logger } = this.deps;
    const view = await pipes.runtimeView(pipeId);
    if (!view || !RUNNING_STATES.includes(view.row.state)) return 'done';
    const connector = this.deps.pipes.kinds.connectorFor(view.row.sourceKind);
    if (!connector) {
      await this.transition(
        pipeId,
        'Failed',
        `${view.row.sourceKind} pipes are not supported yet`,
        RUNNING_STATES,
        'SLUICE_ERR_UNSUPPORTED',
      );
      return 'done';
    }
    try {
      await runPipe(connector, {
        pipeId,
        config: view.config,
        engine: this.deps.engines.engineFor(view.service),
        sourceReader: this.deps.engines.sourceReaderFor(view.service),
        target: targetTablesOf(this.deps.engines.engineFor(view.service)),
        store,
        progress: runProgressOf(store, pipeId),
        localFilesDir: this.deps.localFilesDir,
        allowPrivateSources: this.deps.allowPrivateSources,
        allowPlaintextKafka: this.deps.allowPlaintextKafka,
        awsRegion: this.deps.awsRegion,
        organizationId: view.row.organizationId,
        startedIn: view.row.state,
        logger,
        signal,
        redact: (text) => this.hidePaths(view.redact(text)),
        setState: (to, reason, from, code) => this.transition(pipeId, to, reason, from, code),
        opened: (source) => {
          if (source) {
            this.sources.set(pipeId, source);
            this.throughput.set(pipeId, new Throughput());
          } else {
            this.sources.delete(pipeId);
            this.throughput.delete(pipeId);
          }
        },
        committed: (batch) => {
          this.throughput.get(pipeId)?.add(batch.rows, batch.bytes);
          this.history.written(pipeId);
        },
        failpoint: failpointFor(this.deps.killAt, view.row.name),
        ...(this.deps.idleStagesMs !== undefined && { idleStagesMs: this.deps.idleStagesMs }),
        history: { days: this.deps.pipeHistoryDays, pipeName: view.row.name },
        checkDisk: () => this.deps.engines.checkDisk(view.service),
        ...(sharesCdcCapacity(connector) && this.deps.cdcCapacity
          ? { permits: await this.deps.cdcCapacity.forService(view.service.id) }
          : {}),
      });
      return 'done';
    } catch (thrown) {
      if (signal.aborted) return 'done';
      const context = this.cleanupContext(view.row);
      const error = explainsRunFailure(connector)
        ? await connector.runFailure(thrown, view.config, context)
        : thrown;
      const message = this.hidePaths(view.redact(error instanceof Error ? error.message : String(error)));
      const code = failureCode(error);
      // Also when the state stays (Degraded again, for another reason): lastError is the latest.
      await store.repos.progress.recordError(pipeId, message, code);
      // Retry or fail by the code alone (src/error-codes.ts): a PermanentError's never retries.
      if (!isRetried(code)) {
        await this.transition(pipeId, 'Failed', message, RUNNING_STATES, code);
        return 'done';
      }
      logger.warn({ pipeId, error: message, code }, 'pipe worker failed; retrying');
      await this.transition(
        pipeId,
        'Degraded',
        message,
        ['Provisioning', 'Setup', 'Snapshot', 'Running'],
        code,
      );
      return 'retry';
    }
  }

  /**
   * A state change of the runtime's (or of a source that moves its pipe itself); a pipe that goes
   * `Degraded` or `Failed` says why in `lastError`, `lastErrorCode` and `lastErrorAt` too (README,
   * "Pipe states"); a source that moves its pipe without a code records SLUICE_ERR_SOURCE.
   */
  private async transition(
    pipeId: string,
    to: PipeState,
    reason: string,
    from: string[],
    code: ErrorCode = 'SLUICE_ERR_SOURCE',
  ): Promise<boolean> {
    const moved = await this.deps.pipes.runtimeTransition(pipeId, to, reason, from);
    const failed = to === 'Degraded' || to === 'Failed';
    if (moved && failed) await this.deps.store.repos.progress.recordError(pipeId, reason, code);
    // Written in the background, in order (history-recorder.ts): the move is the store's, and a
    // run goes on at once (its first batch would otherwise wait for a service's first history row).
    if (moved) void this.history.moved(pipeId, to, failed ? code : '');
    return moved;
  }

  /**
   * Engine and file-system messages name the server's paths; a user sees `file://` paths as they
   * wrote them and `<data dir>` for the rest.
   */
  private hidePaths(text: string): string {
    return this.access.hidePaths(text);
  }
}
