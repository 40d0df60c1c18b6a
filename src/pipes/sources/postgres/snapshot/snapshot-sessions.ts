import type pg from 'pg';
import type { Logger } from 'pino';
import { closeClient, connect, type PostgresSource, tooManySessions } from '../session/index.js';

/** Tries of a range that the server refuses a session while the snapshot holds none. */
const REFUSED_TRIES = 5;
/** The pause between those tries, with as much again of jitter (sessions refused together part). */
const REFUSED_PAUSE_MS = 200;

/**
 * The sessions a run's snapshot ranges read on, kept from one range to the next: a new session
 * costs PostgreSQL a backend (fork, authentication, catalog caches) and this process a handshake,
 * about 30 ms of CPU together (bench/postgres.ts), for every range of every table. A session comes
 * back only when its work succeeded: after any failure it is closed, so a broken or confused
 * session never serves another range. At most as many stay open as ranges ran at once.
 *
 * When the server refuses a session for its connection limits (its other clients hold the rest),
 * the snapshot goes on with the sessions it has: no more are asked for, and a range waits for one
 * to come back. While it has none, sessions are asked for one at a time (the server counts a new
 * session before it checks the limits, so sessions asked for together can all be refused where
 * some would fit, and would be again and again if they kept asking together): a refused range
 * tries again a few times after a pause, then fails; once one is open, the others may ask again.
 */
export class SnapshotSessions {
  private readonly idle: pg.Client[] = [];
  /** Ranges waiting for a session: each is handed one, or `undefined` to look again. */
  private readonly waiting: ((client: pg.Client | undefined) => void)[] = [];
  /** Sessions open (idle or working), and being opened. */
  private open = 0;
  private connecting = 0;
  /** As many sessions as were open when the server first refused one (1 while none is: `probing`). */
  private cap = Number.POSITIVE_INFINITY;
  /** The server refused a session while none was open: one is asked for at a time until one opens. */
  private probing = false;
  private closed = false;

  constructor(
    private readonly source: PostgresSource,
    private readonly context: { allowPrivateSources: boolean; logger?: Logger },
  ) {}

  /** Runs `work` on an idle session, or a new one. */
  async use<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = await this.take();
    let reusable = false;
    try {
      const result = await work(client);
      reusable = true;
      return result;
    } finally {
      if (reusable && !this.closed) this.giveBack(client);
      else {
        this.open -= 1;
        this.wakeOne();
        await closeClient(client, this.context.logger);
      }
    }
  }

  /** Ends the idle sessions; one still working ends when its work does. Waiting ranges fail. */
  async close(): Promise<void> {
    this.closed = true;
    for (const wake of this.waiting.splice(0)) wake(undefined);
    await Promise.all(this.idle.splice(0).map((client) => closeClient(client, this.context.logger)));
  }

  private async take(): Promise<pg.Client> {
    let refused = 0;
    for (;;) {
      const idle = this.idle.pop();
      if (idle) return idle;
      if (this.closed) throw ended();
      if (this.open + this.connecting < this.cap) {
        const opened = await this.openOne();
        if (!(opened instanceof Error)) return opened;
        if (this.open === 0) {
          // None of ours to wait for: try again after a pause, a few times.
          refused += 1;
          if (refused >= REFUSED_TRIES) throw opened;
          await new Promise((resolve) => setTimeout(resolve, REFUSED_PAUSE_MS * (1 + Math.random())));
          continue;
        }
        if (this.closed) throw ended();
      }
      const handed = await new Promise<pg.Client | undefined>((resolve) => this.waiting.push(resolve));
      if (handed) return handed;
    }
  }

  /**
   * A new session, or the server's refusal for its connection limits (which caps the sessions at
   * those open, if any are). Any other failure is thrown.
   */
  private async openOne(): Promise<pg.Client | Error> {
    this.connecting += 1;
    try {
      const client = await connect(this.source, this.context, { snapshot: true });
      this.connecting -= 1;
      this.open += 1;
      if (this.probing) {
        // One fits: the ranges waiting may ask for theirs; a refusal now caps them at those open.
        this.probing = false;
        this.cap = Number.POSITIVE_INFINITY;
        for (const wake of this.waiting.splice(0)) wake(undefined);
      }
      return client;
    } catch (error) {
      this.connecting -= 1;
      this.wakeOne();
      if (!tooManySessions(error)) throw error;
      if (this.open > 0 && this.cap === Number.POSITIVE_INFINITY) {
        this.context.logger?.warn(
          { sessions: this.open, err: error },
          'PostgreSQL refused another session for its connection limits: the snapshot goes on with the sessions it has',
        );
      }
      if (this.open > 0) this.cap = Math.min(this.cap, this.open);
      else {
        this.probing = true;
        this.cap = 1;
      }
      return error as Error;
    }
  }

  private giveBack(client: pg.Client): void {
    const waiter = this.waiting.shift();
    if (waiter) waiter(client);
    else this.idle.push(client);
  }

  /** A session was closed, or one could not be opened: a waiting range looks again. */
  private wakeOne(): void {
    this.waiting.shift()?.(undefined);
  }
}

function ended(): Error {
  return new Error('the snapshot ended before this range could read');
}
