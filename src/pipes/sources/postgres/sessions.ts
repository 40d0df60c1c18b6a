import type pg from 'pg';
import type { Logger } from 'pino';
import { closeClient, connect, type PostgresSource, tooManySessions } from './connection.js';

/**
 * The sessions a run's snapshot ranges read on, kept from one range to the next: a new session
 * costs PostgreSQL a backend (fork, authentication, catalog caches) and this process a handshake,
 * about 30 ms of CPU together (bench/postgres.ts), for every range of every table. A session comes
 * back only when its work succeeded: after any failure it is closed, so a broken or confused
 * session never serves another range. At most as many stay open as ranges ran at once.
 *
 * When the server refuses a session for its connection limits while this snapshot has some of its
 * own, the snapshot goes on with those: the range waits for one to come back rather than failing
 * (the server's other clients may hold the rest), and no more are asked for.
 */
export class SnapshotSessions {
  private readonly idle: pg.Client[] = [];
  /** Ranges waiting for a session to come back; each is handed one, or `undefined` to ask for its own. */
  private readonly waiting: ((client: pg.Client | undefined) => void)[] = [];
  private open = 0;
  /** As many sessions as the server gave before it refused one. */
  private cap = Number.POSITIVE_INFINITY;
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
        await closeClient(client, this.context.logger);
        // A waiting range may open a session in its place.
        this.waiting.shift()?.(undefined);
      }
    }
  }

  /** Ends the idle sessions; one still working ends when its work does. */
  async close(): Promise<void> {
    this.closed = true;
    for (const wake of this.waiting.splice(0)) wake(undefined);
    await Promise.all(this.idle.splice(0).map((client) => closeClient(client, this.context.logger)));
  }

  private async take(): Promise<pg.Client> {
    for (;;) {
      const idle = this.idle.pop();
      if (idle) return idle;
      if (this.closed) throw new Error('the snapshot ended before this range could read');
      if (this.open < this.cap) {
        this.open += 1;
        try {
          return await connect(this.source, this.context);
        } catch (error) {
          this.open -= 1;
          if (!tooManySessions(error) || this.open === 0) throw error;
          this.cap = this.open;
          this.context.logger?.warn(
            { sessions: this.open, err: error },
            'PostgreSQL refused another session for its connection limits: the snapshot goes on with the sessions it has',
          );
        }
      }
      const handed = await new Promise<pg.Client | undefined>((resolve) => this.waiting.push(resolve));
      if (handed) return handed;
    }
  }

  private giveBack(client: pg.Client): void {
    const waiter = this.waiting.shift();
    if (waiter) waiter(client);
    else this.idle.push(client);
  }
}
