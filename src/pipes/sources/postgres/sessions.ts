import type pg from 'pg';
import type { Logger } from 'pino';
import { closeClient, connect, type PostgresSource } from './connection.js';

/**
 * The sessions a run's snapshot ranges read on, kept from one range to the next: a new session
 * costs PostgreSQL a backend (fork, authentication, catalog caches) and this process a handshake,
 * about 30 ms of CPU together (bench/postgres.ts), for every range of every table. A session comes
 * back only when its work succeeded: after any failure it is closed, so a broken or confused
 * session never serves another range. At most as many stay open as ranges ran at once.
 */
export class SnapshotSessions {
  private readonly idle: pg.Client[] = [];
  private closed = false;

  constructor(
    private readonly source: PostgresSource,
    private readonly context: { allowPrivateSources: boolean; logger?: Logger },
  ) {}

  /** Runs `work` on an idle session, or a new one. */
  async use<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = this.idle.pop() ?? (await connect(this.source, this.context));
    let reusable = false;
    try {
      const result = await work(client);
      reusable = true;
      return result;
    } finally {
      if (reusable && !this.closed) this.idle.push(client);
      else await closeClient(client, this.context.logger);
    }
  }

  /** Ends the idle sessions; one still working ends when its work does. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.idle.splice(0).map((client) => closeClient(client, this.context.logger)));
  }
}
