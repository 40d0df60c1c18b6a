import { LogicalReplicationService, PgoutputPlugin } from 'pg-logical-replication';
import type { Logger } from 'pino';
import { sleep } from '../../../../concurrency.js';
import { CodedError } from '../../../../errors.js';
import { privateHostProblem } from '../../../../net/index.js';
import {
  clientConfig,
  LastHeard,
  type PostgresSource,
  replicationSocketOf,
  SourceConnectError,
} from '../session/index.js';
import { formatLsn, parseLsn } from './lsn.js';
import { type Message, PgoutputDecoder, type Relation, type Value } from './pgoutput.js';
import { type Position, partAfter, reaches, splitAt } from './positions.js';

/** One row change, at its own WAL position (its version: later changes of a row sit later). */
export interface RowChange {
  kind: 'insert' | 'update' | 'delete';
  lsn: bigint;
  relation: Relation;
  row: Value[] | null;
  old: Value[] | null;
  oldIsKey: boolean;
}

export interface TruncateChange {
  kind: 'truncate';
  lsn: bigint;
  relations: Relation[];
}

export type Change = RowChange | TruncateChange;

/**
 * A committed transaction: its changes in order, where its commit record starts (`finalLsn`) and
 * ends (`endLsn`). A large one arrives in pieces (PIECE): each piece but the last has `through`,
 * its last change's position, and no end yet (`endLsn` 0).
 */
export interface Transaction {
  /** The transaction's id (pgoutput's BEGIN), as PostgreSQL's 32 bits. */
  xid: number;
  finalLsn: bigint;
  endLsn: bigint;
  through?: bigint;
  changes: Change[];
  receivedAt: number;
  bytes: number;
}

/**
 * A transaction is held whole until its commit only up to this size: a larger one (a backfill
 * UPDATE of millions of rows) is handed on in pieces, each a batch of its own, so memory stays
 * bounded whatever the transaction's size. The cut depends only on the transaction's own changes
 * (never between changes at one position: a multi-row insert shares one), so it is the same when
 * the transaction comes again after a restart.
 */
const PIECE = { changes: 50_000, bytes: 32 * 1024 * 1024 };

/** pgoutput through the library's stream, decoded by Sluice (the library would type the values). */
class TextPgoutput extends PgoutputPlugin {
  private readonly decoder = new PgoutputDecoder();
  // The library's type is its own decoded message; this plugin hands on Sluice's instead.
  override parse(buffer: Buffer): never {
    return this.decoder.decode(buffer) as never;
  }
}

/**
 * A pipe's logical replication stream (README, "How a PostgreSQL pipe runs"): transactions arrive
 * whole (at their commit) into `ready`, where the run claims them; the slot's confirmed position moves only
 * when the run says a batch is committed in the store. While nothing is pending, the server's
 * keepalive position is confirmed too, so WAL of tables the pipe does not read is recycled.
 */
type StreamOptions = ConstructorParameters<typeof ChangeStream>[0];

/**
 * How a stream notices a server gone quiet without a reset (a dropped route, a failed-over
 * address), which TCP alone would take about 15 minutes to report: after `pingAfterMs` with no
 * message it asks the server for a keepalive at once, and after `silentLimitMs` it gives up on the
 * connection. The server answers such a request between any two messages it sends.
 */
const HEARING = { checkEveryMs: 5_000, pingAfterMs: 10_000, silentLimitMs: 30_000 };

/** How long a stream waits for a slot another connection still holds (it lets go as it closes). */
const BUSY_SLOT = { waitMs: 250, attempts: 40 };

/**
 * A started stream of the slot. The connection that made the slot (and held its snapshot) lets go
 * of it as it closes: while the server says the slot is active (55006), it is asked again.
 */
export async function openChangeStream(
  options: StreamOptions,
  context: { allowPrivateSources: boolean; signal: AbortSignal },
): Promise<ChangeStream> {
  for (let attempt = 0; ; attempt += 1) {
    const stream = new ChangeStream(options);
    try {
      await stream.start(context);
      return stream;
    } catch (error) {
      await stream.close();
      if ((error as { code?: string }).code !== '55006' || attempt >= BUSY_SLOT.attempts) throw error;
      await sleep(BUSY_SLOT.waitMs, context.signal);
    }
  }
}

export class ChangeStream {
  readonly ready: Transaction[] = [];
  private open: Transaction | undefined;
  private readonly service: LogicalReplicationService;
  private failure: Error | undefined;
  private readonly waiters = new Set<() => void>();
  private roomWaiters: (() => void)[] = [];
  /** Changes in `ready`: past the limit, reading pauses (PostgreSQL keeps the rest). */
  private readyChanges = 0;
  private confirmedLsn: bigint;
  /** The newest position the server reported (keepalives and data). */
  lastReceived: bigint;
  private lastStatusAt = 0;
  /** When the server was last heard from (any message). */
  private readonly lastHeard = new LastHeard();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: {
      source: PostgresSource;
      slot: string;
      publication: string;
      from: bigint;
      maxReadyChanges: number;
      /** True while the run has no batch of changes in flight. */
      quiet: () => boolean;
      logger: Logger;
    },
  ) {
    this.confirmedLsn = options.from;
    this.lastReceived = options.from;
    this.service = new LogicalReplicationService(clientConfig(options.source, { replication: true }), {
      acknowledge: { auto: false, timeoutSeconds: 0 },
      flowControl: { enabled: true },
    });
    this.service.on('data', (lsn: string, message: Message) => this.take(parseLsn(lsn), message));
    this.service.on('heartbeat', (lsn: string, _time: number, respond: boolean) =>
      this.heartbeat(parseLsn(lsn), respond),
    );
    this.service.on('error', (error: Error) => this.fail(error));
  }

  /** Starts streaming from the slot at `from` (the last position the store committed). */
  async start(context: { allowPrivateSources: boolean }): Promise<void> {
    if (!context.allowPrivateSources) {
      const problem = await privateHostProblem(this.options.source.host, 'SLUICE_ALLOW_PRIVATE_SOURCES');
      if (problem) throw new SourceConnectError('host', problem);
    }
    const plugin = new TextPgoutput({ protoVersion: 1, publicationNames: [this.options.publication] });
    // Resolves when the stream ends; failures arrive as 'error' too.
    this.service.subscribe(plugin, this.options.slot, formatLsn(this.options.from)).then(
      () => this.fail(new Error('the server ended it')),
      (error: unknown) => this.fail(error instanceof Error ? error : new Error(String(error))),
    );
    await new Promise<void>((resolve, reject) => {
      const cleanup = () => {
        this.waiters.delete(failed);
        this.service.off('start', started);
      };
      const started = () => {
        cleanup();
        resolve();
      };
      const failed = () => {
        if (!this.failure) return;
        cleanup();
        reject(this.failure);
      };
      this.service.once('start', started);
      this.waiters.add(failed);
    });
    this.lastHeard.heard();
    this.timer = setInterval(() => this.keepInTouch(), HEARING.checkEveryMs);
  }

  get confirmed(): bigint {
    return this.confirmedLsn;
  }

  /** The store committed everything up to `lsn`: the server may forget it. */
  confirm(lsn: bigint): void {
    if (lsn > this.confirmedLsn) this.confirmedLsn = lsn;
    this.sendStatus(true);
  }

  /**
   * Waits until everything after `from` and up to `to` is ready (a batch read again after a
   * crash). What `from` passed goes meanwhile: a large transaction comes again whole, and its
   * pieces already committed would otherwise fill `ready` and pause the stream before `to`.
   */
  async waitFor(from: Position, to: Position, signal: AbortSignal): Promise<void> {
    for (;;) {
      this.takeRange(from, from);
      if (this.ready.some((t) => reaches(t, to))) return;
      this.throwIfFailed();
      signal.throwIfAborted();
      await new Promise<void>((resolve) => {
        const done = () => {
          this.waiters.delete(done);
          signal.removeEventListener('abort', done);
          resolve();
        };
        this.waiters.add(done);
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }

  /**
   * Takes what is after `from` and up to `to` out of `ready` (a piece that `to` cuts stays with
   * the rest), dropping what `from` passed (committed).
   */
  takeRange(from: Position, to: Position): Transaction[] {
    const taken: Transaction[] = [];
    while (this.ready.length > 0) {
      const [head, rest] = splitAt(this.ready[0] as Transaction, to);
      if (!head) break;
      if (rest) this.ready[0] = rest;
      else this.ready.shift();
      this.readyChanges -= head.changes.length;
      const kept = partAfter(head, from);
      if (kept) taken.push(kept);
      if (rest) break;
    }
    const waiting = this.roomWaiters;
    this.roomWaiters = [];
    for (const wake of waiting) wake();
    return taken;
  }

  throwIfFailed(): void {
    if (this.failure) throw this.failure;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.failure ??= new Error('the replication stream is closed');
    this.wake();
    for (const wake of this.roomWaiters) wake();
    // A connection in COPY BOTH mode may wait on its goodbye; its socket goes now, so the slot is
    // free for the next stream at once (session/pg-internals.ts).
    replicationSocketOf(this.service)?.destroy();
    await this.service
      .destroy()
      .catch((error: unknown) =>
        this.options.logger.warn({ err: error }, 'closing the replication stream failed'),
      );
  }

  private async take(lsn: bigint, message: Message): Promise<void> {
    this.lastHeard.heard();
    if (lsn > this.lastReceived) this.lastReceived = lsn;
    switch (message.tag) {
      case 'begin':
        this.open = {
          xid: message.xid >>> 0,
          finalLsn: message.finalLsn,
          endLsn: 0n,
          changes: [],
          receivedAt: 0,
          bytes: 0,
        };
        return;
      case 'insert':
      case 'update':
      case 'delete': {
        await this.cutIfLarge(lsn);
        const old = message.tag === 'insert' ? null : message.old;
        const row = message.tag === 'delete' ? null : message.row;
        const oldIsKey = message.tag === 'insert' ? false : message.oldIsKey;
        this.open?.changes.push({ kind: message.tag, lsn, relation: message.relation, row, old, oldIsKey });
        if (this.open) this.open.bytes += sizeOf(row) + sizeOf(old);
        return;
      }
      case 'truncate':
        await this.cutIfLarge(lsn);
        this.open?.changes.push({ kind: 'truncate', lsn, relations: message.relations });
        return;
      case 'commit': {
        const transaction = this.open;
        this.open = undefined;
        if (!transaction) return;
        transaction.endLsn = message.endLsn;
        await this.handOn(transaction);
        return;
      }
      default:
        return;
    }
  }

  /** Hands the open transaction's changes on as a piece when they reached PIECE, before `next`. */
  private async cutIfLarge(next: bigint): Promise<void> {
    const open = this.open;
    const last = open?.changes.at(-1);
    if (!open || !last || next <= last.lsn) return;
    if (open.changes.length < PIECE.changes && open.bytes < PIECE.bytes) return;
    this.open = { ...open, changes: [], bytes: 0 };
    await this.handOn({ ...open, through: last.lsn });
  }

  /** A transaction (or a piece of one) is ready to claim; reading waits while too many are. */
  private async handOn(transaction: Transaction): Promise<void> {
    transaction.receivedAt = Date.now();
    this.ready.push(transaction);
    this.readyChanges += transaction.changes.length;
    this.wake();
    // Backpressure: the library reads the next message only when this one is handled.
    while (this.readyChanges > this.options.maxReadyChanges && !this.failure) {
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
    }
  }

  private heartbeat(lsn: bigint, respond: boolean): void {
    this.lastHeard.heard();
    if (lsn > this.lastReceived) this.lastReceived = lsn;
    // Nothing received is waiting to be committed: everything up to here is done with.
    if (!this.open && this.ready.length === 0 && this.options.quiet() && lsn > this.confirmedLsn) {
      this.confirmedLsn = lsn;
    }
    if (respond) this.sendStatus(true);
  }

  /** The regular status update, and the check that the server is still there (HEARING). */
  private keepInTouch(): void {
    // Paused for room in `ready`, this side reads nothing.
    const silentMs = this.lastHeard.silentMs(this.roomWaiters.length === 0);
    if (silentMs >= HEARING.silentLimitMs) {
      this.fail(
        new CodedError(
          'SLUICE_ERR_SOURCE_UNREACHABLE',
          `no word from the server in ${Math.round(silentMs / 1000)} s, not even to a keepalive request: the connection is taken as lost`,
        ),
      );
      return;
    }
    if (silentMs >= HEARING.pingAfterMs) this.sendStatus(true, true);
    else this.sendStatus(false);
  }

  private sendStatus(now: boolean, askForReply = false): void {
    if (!now && Date.now() - this.lastStatusAt < 10_000) return;
    this.lastStatusAt = Date.now();
    // The library reports the position it is given plus one; positions here already point past
    // what they cover (a commit's end, the server's keepalive). Reported as they are, a server
    // shutting down sees its walsender's last position confirmed exactly and lets it go: off by
    // one, a fast shutdown waits for the stream to end.
    const reported = this.confirmedLsn > 0n ? this.confirmedLsn - 1n : 0n;
    this.service
      .acknowledge(formatLsn(reported), askForReply)
      .catch((error: unknown) => this.fail(error as Error));
  }

  /**
   * The stream is done with: what the pipe's state shows names the source (a reset socket says
   * nothing of where); the error's code stays on it: the server's SQLSTATE (55006: the slot is
   * still in use), or the catalog code of a failure of this side (a server gone silent).
   */
  private fail(error: Error): void {
    if (!this.failure) {
      const failure = new Error(`PostgreSQL: the replication stream stopped (${error.message})`, {
        cause: error,
      });
      const code = (error as { code?: unknown }).code;
      this.failure = code === undefined ? failure : Object.assign(failure, { code });
    }
    this.wake();
  }

  private wake(): void {
    for (const wake of [...this.waiters]) wake();
  }
}

function sizeOf(values: Value[] | null): number {
  let bytes = 0;
  for (const value of values ?? []) if (typeof value === 'string') bytes += value.length + 1;
  return bytes;
}
