import type { Logger } from 'pino';
import type { EngineRegistry } from '../../engine/index.js';
import {
  ensureHistory,
  isMissingTable,
  type PipeMinute,
  pipeMinutes,
  recordEvents,
  stateEvent,
} from '../history/index.js';
import type { RuntimeView } from '../runtime-port.js';

/** How often the states of the pipes that run and are not Running are written (one row a minute each). */
const TICK_MS = 60_000;

/**
 * The states the runtime moves a pipe to, in its history (src/pipes/history): a row at each move,
 * and one a minute for each pipe this node runs while it is in any state but Running (Degraded,
 * a snapshot), so "minutes not Running" counts every such minute. A pipe that does not run writes
 * nothing. A row that cannot be written is logged; it never holds up the move.
 */
export class HistoryRecorder {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: {
      engines: EngineRegistry;
      logger: Logger;
      /** Days of history the table keeps (SLUICE_PIPE_HISTORY_DAYS). */
      days: number;
      view(pipeId: string): Promise<RuntimeView | undefined>;
      /** The pipes this node runs now. */
      running(): Iterable<string>;
      /** The pipes in a state but Running that has a worker (one store query). */
      notRunning(): Promise<string[]>;
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** The pipe was moved to `state` (its error's code with it when it failed or is degraded). */
  async moved(pipeId: string, state: string, errorCode = ''): Promise<void> {
    const view = await this.deps.view(pipeId).catch((error: unknown) => {
      this.deps.logger.warn({ err: error, pipeId, state }, 'could not write a state to the pipe history');
      return undefined;
    });
    if (view) await this.record(view, state, errorCode);
  }

  /**
   * The last hour of a pipe's history, 60 minutes ending with the one under way, oldest first (its
   * status's series); none when the engine cannot answer now (logged: a status never fails for it).
   */
  async lastHour(view: RuntimeView, now = new Date()): Promise<PipeMinute[]> {
    const engine = this.deps.engines.engineFor(view.service);
    const from = new Date(Math.floor(now.getTime() / 60_000) * 60_000 - 59 * 60_000);
    try {
      return await pipeMinutes(engine, view.row.id, from, now);
    } catch (error) {
      this.deps.logger.warn({ err: error, pipeId: view.row.id }, 'could not read the pipe history');
      return [];
    }
  }

  private async tick(): Promise<void> {
    try {
      const notRunning = new Set(await this.deps.notRunning());
      for (const pipeId of [...this.deps.running()].filter((id) => notRunning.has(id))) {
        const view = await this.deps.view(pipeId);
        if (view && view.row.state !== 'Running') await this.record(view, view.row.state, '');
      }
    } catch (error) {
      this.deps.logger.warn(
        { err: error },
        'could not write the states of the pipes not Running to their history',
      );
    }
  }

  private async record(view: RuntimeView, state: string, errorCode: string): Promise<void> {
    const engine = this.deps.engines.engineFor(view.service);
    const event = stateEvent({ pipeId: view.row.id, pipeName: view.row.name }, state, errorCode);
    try {
      await recordEvents(engine, [event]).catch(async (error: unknown) => {
        // Not made yet (no batch committed), or dropped by an admin since: made, then written.
        if (!isMissingTable(error)) throw error;
        await ensureHistory(engine, this.deps.days);
        await recordEvents(engine, [event]);
      });
    } catch (error) {
      this.deps.logger.warn(
        { err: error, pipeId: view.row.id, state },
        'could not write a state to the pipe history',
      );
    }
  }
}
