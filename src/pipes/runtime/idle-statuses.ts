import type { Logger } from 'pino';
import type { Json, Store } from '../../store/index.js';
import type { PipesService } from '../pipes-service.js';
import {
  type CleanupContext,
  reportsIdleStatus,
  type SourceKinds,
  type SourceStatus,
} from '../sources/index.js';
import { IDLE_STATES } from '../state.js';

/** A pipe that does not run has its source asked at most this often (each time a connection). */
const IDLE_STATUS_MS = 10_000;
/** For the metrics, and after an ask that failed, at most this often. */
const IDLE_METRICS_MS = 60_000;
const IDLE_RETRY_MS = 60_000;
/** Asks of idle sources the metrics start at once. */
const METRICS_ASKS_AT_ONCE = 4;

interface Known {
  at: number;
  failed: boolean;
  status?: SourceStatus;
  asking?: Promise<SourceStatus>;
}

export interface IdleStatusDeps {
  store: Store;
  pipes: PipesService;
  logger: Logger;
  /** What a connector is told when it speaks to a pipe's source outside a run. */
  contextFor(pipe: { id: string; organizationId: string }): CleanupContext;
}

/** The kinds whose sources say something of a pipe that does not run (ReportsIdleStatus). */
function kindsWithIdleStatus(kinds: SourceKinds): string[] {
  return kinds.list.filter((kind) => reportsIdleStatus(kind.connector)).map((kind) => kind.name);
}

/**
 * What the sources of pipes that do not run say of them (a database pipe's slot, whose lag grows
 * while the pipe is stopped), asked from the stored cursor and kept a while: a source is asked at
 * most every IDLE_STATUS_MS per pipe, and once there is an answer, in the background, so a source
 * that is slow to answer (a Degraded pipe's) never holds up `/status` or a metrics scrape.
 */
export class IdleStatuses {
  private readonly known = new Map<string, Known>();
  /** Asks of idle sources running now. */
  private asks = 0;

  constructor(private readonly deps: IdleStatusDeps) {}

  /** A pipe's idle status, waiting for the first answer only; {} from a source with nothing to say. */
  async status(pipeId: string, cursor: Json | null): Promise<SourceStatus> {
    const known = this.freshen(pipeId, cursor);
    return known.status ?? (await known.asking) ?? {};
  }

  /**
   * For the metrics, what the sources of the pipes that do not run said last (a stopped pipe's slot
   * lag), never waiting on a source: one that is due is asked in the background, for the next scrape.
   */
  async statuses(running: (pipeId: string) => boolean): Promise<[pipeId: string, status: SourceStatus][]> {
    let idle: string[];
    try {
      idle = await this.deps.pipes.pipesInStates(IDLE_STATES, kindsWithIdleStatus(this.deps.pipes.kinds));
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'could not list the pipes that do not run for the metrics');
      return [];
    }
    const statuses: [string, SourceStatus][] = [];
    for (const pipeId of idle) {
      if (running(pipeId)) continue;
      const options = { everyMs: IDLE_METRICS_MS, atOnce: METRICS_ASKS_AT_ONCE };
      const { status } = this.freshen(pipeId, undefined, options);
      if (status) statuses.push([pipeId, status]);
    }
    return statuses;
  }

  /** The pipe started, changed or was deleted: what its source said no longer holds. */
  forget(pipeId: string): void {
    this.known.delete(pipeId);
  }

  /**
   * The known status of a pipe that does not run; its source is asked again when `everyMs` passed
   * (IDLE_RETRY_MS at least after a failed ask, so a source that refuses is not asked every scrape),
   * unless `atOnce` asks already run.
   */
  private freshen(
    pipeId: string,
    cursor?: Json | null,
    options: { everyMs: number; atOnce?: number } = { everyMs: IDLE_STATUS_MS },
  ): Known {
    let known = this.known.get(pipeId);
    if (!known) {
      known = { at: 0, failed: false };
      this.known.set(pipeId, known);
    }
    const every = known.failed ? Math.max(options.everyMs, IDLE_RETRY_MS) : options.everyMs;
    const busy = options.atOnce !== undefined && this.asks >= options.atOnce;
    if (!known.asking && !busy && Date.now() - known.at >= every) {
      const entry = known;
      this.asks += 1;
      entry.asking = this.ask(pipeId, cursor)
        .then((status) => ({ status, failed: false }))
        .catch((error: unknown) => {
          this.deps.logger.warn(
            { pipeId, err: error },
            "could not ask a stopped pipe's source for its status",
          );
          return { status: {}, failed: true };
        })
        .then(({ status, failed }) => {
          this.asks -= 1;
          Object.assign(entry, { status, failed, at: Date.now(), asking: undefined });
          return status;
        });
    }
    return known;
  }

  /** Asks the source of a pipe that does not run, from `cursor` or else the stored one. */
  private async ask(pipeId: string, cursor?: Json | null): Promise<SourceStatus> {
    const view = await this.deps.pipes.runtimeView(pipeId);
    const connector = view && this.deps.pipes.kinds.connectorFor(view.row.sourceKind);
    if (!view || !connector || !reportsIdleStatus(connector)) return {};
    const from =
      cursor !== undefined ? cursor : ((await this.deps.store.repos.progress.get(pipeId))?.cursor ?? null);
    return connector.idleStatus(view.config, from, this.deps.contextFor(view.row));
  }
}
