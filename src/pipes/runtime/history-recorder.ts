import type { Logger } from 'pino';
import type { EngineRegistry } from '../../engine/index.js';
import {
  ensureHistory,
  type HistoryEvent,
  isMissingTable,
  minuteEvent,
  type PipeLag,
  type PipeMinute,
  pipeMinutes,
  recordEvents,
  stateEvent,
} from '../history/index.js';
import type { RuntimeView } from '../runtime-port.js';

/** How often the minute rows are written (one a minute for each pipe that needs one). */
const TICK_MS = 60_000;

/** What the runtime knows of a pipe it runs now, for its minute row. */
export interface RunSample {
  /** The source's lag as last measured (its last batch, or its last look at the source). */
  lag: PipeLag | undefined;
  /** Nothing committed over the last minute. */
  quiet: boolean;
}

/**
 * The states the runtime moves a pipe to, in its history (src/pipes/history): a row at each move
 * (`kind = 'state'`), and a row a minute (`kind = 'minute'`) for each pipe that is in trouble or
 * waiting, so a window of minutes reads it even when no batch commits:
 * - a pipe this node runs in any state but Running (Degraded, a snapshot), with its last lag;
 * - a pipe this node runs that is Running, committed nothing over the minute and lags behind its
 *   source: a stalled pipe's lag reaches "max lag" alerts;
 * - a Failed pipe (no worker runs it): "minutes not Running" counts every minute until it is
 *   started again or deleted, not only the minute it failed in.
 * A pipe that runs and commits, or idles caught up, or was stopped by request writes nothing. A
 * row that cannot be written is logged; it never holds up the move.
 */
export class HistoryRecorder {
  private timer: NodeJS.Timeout | undefined;
  /** Each pipe's last hour as read in its minute, until a row of it is written (`written`). */
  private readonly lastHours = new Map<string, { minute: number; minutes: PipeMinute[] }>();
  /** Counts writes, so a read that overlapped one is not kept. */
  private generation = 0;
  /** Each pipe's state rows not yet written, the last of a chain (`moved`). */
  private readonly writing = new Map<string, Promise<void>>();

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
      /** The Failed pipes with their last error's code (a store query). */
      failed(): Promise<{ pipeId: string; errorCode: string }[]>;
      /** What the runtime knows of a pipe this node runs; undefined when it does not run it. */
      sample(pipeId: string): RunSample | undefined;
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /**
   * The pipe was moved to `state` (its error's code with it when it failed or is degraded). The
   * rows of one pipe are written in the order of its moves; the returned promise settles (never
   * rejects) once this one is written, or logged as not written. The runtime does not wait for it
   * (supervisor.ts, `transition`): a service's first row makes its history's tables, and a run's
   * first batch would wait for that.
   */
  moved(pipeId: string, state: string, errorCode = ''): Promise<void> {
    const at = new Date();
    const write = (this.writing.get(pipeId) ?? Promise.resolve()).then(() =>
      this.writeMove(pipeId, state, errorCode, at),
    );
    this.writing.set(pipeId, write);
    void write.then(() => {
      if (this.writing.get(pipeId) === write) this.writing.delete(pipeId);
    });
    return write;
  }

  /** Settles once every state row asked for so far is written (or logged as not written). */
  async settled(): Promise<void> {
    await Promise.all(this.writing.values());
  }

  /**
   * Settles once every state row of one pipe asked for so far is written (or logged): a pipe's
   * stop waits for it (supervisor.ts), so a delete right after a move does not take away the pipe
   * its row is written for (a row waiting behind a slow one, a service's first, read the pipe
   * only after the delete and was lost).
   */
  async settledFor(pipeId: string): Promise<void> {
    await this.writing.get(pipeId);
  }

  private async writeMove(pipeId: string, state: string, errorCode: string, at: Date): Promise<void> {
    const view = await this.deps.view(pipeId).catch((error: unknown) => {
      this.deps.logger.warn({ err: error, pipeId, state }, 'could not write a state to the pipe history');
      return null;
    });
    if (view) await this.record(view, (pipe) => stateEvent(pipe, state, errorCode, at));
    else if (view === undefined)
      this.deps.logger.warn(
        { pipeId, state },
        'a state was not written to the pipe history: the pipe is gone',
      );
  }

  /**
   * The last hour of a pipe's history, 60 minutes ending with the one under way, oldest first (its
   * status's series); none when the engine cannot answer now (logged: a status never fails for it).
   */
  async lastHour(view: RuntimeView, now = new Date()): Promise<PipeMinute[]> {
    const pipeId = view.row.id;
    const minute = Math.floor(now.getTime() / 60_000) * 60_000;
    const cached = this.lastHours.get(pipeId);
    if (cached?.minute === minute) return cached.minutes;
    const engine = this.deps.engines.engineFor(view.service);
    const from = new Date(minute - 59 * 60_000);
    const generation = this.generation;
    try {
      const minutes = await pipeMinutes(engine, pipeId, from, now);
      // Kept unless a row was written meanwhile (the read may have missed it).
      if (generation === this.generation) this.keep(pipeId, minute, minutes);
      return minutes;
    } catch (error) {
      this.deps.logger.warn({ err: error, pipeId }, 'could not read the pipe history');
      return [];
    }
  }

  /** Keeps a pipe's last hour; minutes past are forgotten (deleted pipes' too). */
  private keep(pipeId: string, minute: number, minutes: PipeMinute[]): void {
    if (this.lastHours.size >= 1_000) {
      for (const [id, kept] of this.lastHours) if (kept.minute !== minute) this.lastHours.delete(id);
    }
    this.lastHours.set(pipeId, { minute, minutes });
  }

  /**
   * A row of the pipe's history was written (a batch committed): its last hour is read again. The
   * history changes only by this node's writes (one runtime per data directory), so a status
   * polled between them reads nothing from the engine.
   */
  written(pipeId: string): void {
    this.generation += 1;
    this.lastHours.delete(pipeId);
  }

  /** Writes this minute's rows (see the class); one failing pipe does not keep the others'. */
  async tick(): Promise<void> {
    try {
      const notRunning = new Set(await this.deps.notRunning());
      for (const pipeId of this.deps.running()) {
        const sample = this.deps.sample(pipeId);
        const stalled = sample?.quiet === true && (sample.lag?.total ?? 0) > 0;
        if (!notRunning.has(pipeId) && !stalled) continue;
        const view = await this.deps.view(pipeId);
        if (view) await this.record(view, (pipe) => minuteEvent(pipe, view.row.state, '', sample?.lag));
      }
      for (const { pipeId, errorCode } of await this.deps.failed()) {
        const view = await this.deps.view(pipeId);
        if (view?.row.state === 'Failed')
          await this.record(view, (pipe) => minuteEvent(pipe, 'Failed', errorCode, undefined));
      }
    } catch (error) {
      this.deps.logger.warn({ err: error }, "could not write this minute's rows to the pipe history");
    }
  }

  private async record(
    view: RuntimeView,
    eventOf: (pipe: { pipeId: string; pipeName: string }) => HistoryEvent,
  ): Promise<void> {
    const engine = this.deps.engines.engineFor(view.service);
    const event = eventOf({ pipeId: view.row.id, pipeName: view.row.name });
    const state = event.state;
    try {
      await recordEvents(engine, [event]).catch(async (error: unknown) => {
        // Not made yet (no batch committed), or dropped by an admin since: made, then written.
        if (!isMissingTable(error)) throw error;
        await ensureHistory(engine, this.deps.days);
        await recordEvents(engine, [event]);
      });
      this.written(view.row.id);
    } catch (error) {
      this.deps.logger.warn(
        { err: error, pipeId: view.row.id, state },
        'could not write a state to the pipe history',
      );
    }
  }
}
