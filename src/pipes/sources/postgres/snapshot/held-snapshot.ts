import type pg from 'pg';
import type { RunContext } from '../../contract.js';
import { exportSeenSnapshot, type SeenBy } from '../changes/index.js';
import type { CreatedSlot } from '../run/index.js';
import { closeClient, connect, type PostgresSource } from '../session/index.js';
import { SnapshotSessions } from './snapshot-sessions.js';

/**
 * The snapshot a run's ranges read under, kept alive by the session holding it, and the sessions
 * the ranges read on (a new set for each snapshot). Released, ranges read the tables as they are.
 */
export class HeldSnapshot {
  /** The exported snapshot's name; null while none is held. */
  name: string | null = null;
  /** What a snapshot this run exported saw (not a new slot's: its changes start where it was taken). */
  seen: SeenBy | null = null;
  sessions: SnapshotSessions;
  private holder: pg.Client | null = null;

  constructor(
    private readonly source: PostgresSource,
    private readonly context: RunContext,
  ) {
    this.sessions = new SnapshotSessions(source, context);
  }

  /** A new slot's snapshot, held by its replication connection (run/pipe-setup.ts). */
  hold(created: CreatedSlot): void {
    this.holder = created.holder;
    this.name = created.snapshotName;
  }

  /** A transaction held open exports a snapshot for the ranges to read under; says what it saw. */
  async export(): Promise<SeenBy> {
    await this.release();
    this.holder = await connect(this.source, this.context);
    await this.holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const exported = await exportSeenSnapshot(this.holder);
    this.name = exported.name;
    this.seen = exported.seen;
    return exported.seen;
  }

  async release(): Promise<void> {
    const holder = this.holder;
    this.holder = null;
    this.name = null;
    this.seen = null;
    const sessions = this.sessions;
    this.sessions = new SnapshotSessions(this.source, this.context);
    await sessions.close();
    if (holder) await closeClient(holder, this.context.logger);
  }
}
