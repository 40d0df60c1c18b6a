import { createWriteStream } from 'node:fs';
import { truncate } from 'node:fs/promises';
import type { Duplex, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type pg from 'pg';
import { BufferPool } from '../../../../buffer-pool.js';
import { CodedError } from '../../../../errors.js';
import {
  type DataListener,
  LastHeard,
  lendReads,
  type PgConnection,
  pgReaderOf,
  sendQuery,
  socketOf,
} from '../session/index.js';

/** The backend messages the relay consumes itself during COPY OUT (the protocol's codes). */
const COPY_DATA = 0x64; // 'd'
const CONSUMED = new Set([COPY_DATA, 0x48 /* H CopyOutResponse */, 0x4e /* N */, 0x53 /* S */, 0x41 /* A */]);
/** The row text is gathered into blocks of this size, each one write to the file. */
const BLOCK_BYTES = 1024 * 1024;
/** Blocks written ahead of the disk before the socket is paused. */
const WRITE_AHEAD_BYTES = 4 * BLOCK_BYTES;
/**
 * Blocks written, kept for the next relay: every relay of the process takes its blocks here and
 * gives them back once written. A block made anew is external memory to V8, and every 64 MB of
 * it starts a full garbage collection (src/buffer-pool.ts): a snapshot of 5 M rows made a hundred of them.
 * The pool keeps no more than what four ranges at once have in flight.
 */
const blocks = new BufferPool(BLOCK_BYTES, 24);

/**
 * A COPY that sends nothing for this long (while this side reads) is taken as lost: a server gone
 * silent without a reset (a dropped route) would otherwise hold the range until TCP's keepalive
 * gives up, about 11 minutes. A range's COPY sends its rows steadily once it runs; the one wait
 * before it, a lock, ends sooner (LOCK_TIMEOUT_MS.snapshot, session/connection.ts).
 */
export const COPY_SILENCE_MS = 60_000;

/**
 * Runs `COPY ... TO STDOUT` on `client` and writes its text to the file at `path` (a new one, or
 * a reused one written over from its start and cut after the new text: sources/ports.ts,
 * Scratch.reuse); resolves with the rows the server says it sent.
 */
export async function copyToFile(
  client: pg.Client,
  sql: string,
  path: string,
  reused = false,
): Promise<number> {
  const file = createWriteStream(path, { highWaterMark: WRITE_AHEAD_BYTES, flags: reused ? 'r+' : 'w' });
  const rows = await copyOut(client, sql, file);
  if (reused) await truncate(path, file.bytesWritten);
  return rows;
}

/**
 * Runs `COPY ... TO STDOUT` on `client` and writes its text to `sink`, ended when the COPY
 * succeeds and destroyed when it fails. PostgreSQL sends one
 * CopyData message per row; a stream chunk per message (pg-copy-streams) cost this process 2.5
 * CPU-s for the benchmark's 5M rows, where the relay takes 1.7 (bench/postgres.ts). The relay instead takes the socket's chunks
 * from pg while the COPY runs, drops each message's 5-byte header in place (copyWithin, no
 * allocation per row) and writes whole chunks. The first message that is not part of the COPY's
 * data (CopyDone, an ErrorResponse, ...) and everything after it go back to pg, which then
 * reports the statement's end or error as for any query. Resolves with the rows the server's
 * CommandComplete (`COPY n`) counts.
 */
export function copyOut(client: pg.Client, sql: string, sink: Writable): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    client.query(new CopyRelay(sql, sink, resolve, reject));
  });
}

/** pg's Submittable: pg calls `submit` when the query's turn comes, then the handlers. */
class CopyRelay {
  private socket: Duplex | undefined;
  private pgListener: DataListener | undefined;
  /** The code of the message being read; -1 between messages. */
  private code = -1;
  private lengthBytes = 0;
  private length = 0;
  /** Bytes of the current message's body still to come. */
  private left = 0;
  private sinkError: Error | undefined;
  private block: Buffer = blocks.take(BLOCK_BYTES);
  private used = 0;
  private settled = false;
  /** The rows the server counted in its CommandComplete; undefined until it came. */
  private rows: number | undefined;
  private readonly onData: DataListener = (chunk) => {
    this.lastHeard.heard();
    this.relay(chunk);
  };
  private readonly lastHeard = new LastHeard();
  private watchdog: NodeJS.Timeout | undefined;

  constructor(
    private readonly text: string,
    private readonly sink: Writable,
    private readonly resolve: (rows: number) => void,
    private readonly reject: (error: Error) => void,
  ) {
    // A sink that cannot be written fails the copy once PostgreSQL is done with it: the session
    // stays in step, and the rest of the data is dropped. The socket may be paused for a drain
    // that a failed sink never emits: it reads on.
    sink.on('error', (error) => {
      this.sinkError ??= error;
      this.socket?.resume();
    });
  }

  /** pg fails the query with what this returns. Takes pg's socket (session/pg-internals.ts). */
  submit(connection: PgConnection): Error | undefined {
    const socket = socketOf(connection);
    const pgReader = pgReaderOf(socket);
    if (!pgReader) return new Error('the PostgreSQL connection is not in a state to COPY');
    this.socket = socket;
    this.pgListener = pgReader;
    socket.removeListener('data', pgReader);
    socket.on('data', this.onData);
    lendReads(socket, true);
    sendQuery(connection, this.text);
    this.lastHeard.heard();
    this.watchdog = setInterval(() => this.checkSilence(), COPY_SILENCE_MS / 6);
    return undefined;
  }

  /** Fails the COPY, and ends its connection, when the server has sent nothing for too long. */
  private checkSilence(): void {
    const socket = this.socket;
    if (!socket) return;
    // Paused for the file to drain, this side reads nothing.
    const silentMs = this.lastHeard.silentMs(!socket.isPaused());
    if (silentMs < COPY_SILENCE_MS) return;
    this.detach();
    this.finish(
      new CodedError(
        'SLUICE_ERR_SOURCE_UNREACHABLE',
        `PostgreSQL sent nothing of the COPY in ${Math.round(silentMs / 1000)} s: the connection is taken as lost`,
      ),
    );
    socket.destroy();
  }

  /** Keeps the COPY's row text of one chunk (moved to its front) and writes it. */
  private relay(chunk: Buffer): void {
    const n = chunk.length;
    let r = 0;
    let w = 0;
    while (r < n) {
      if (this.left > 0) {
        const take = Math.min(this.left, n - r);
        if (this.code === COPY_DATA) {
          if (w !== r) chunk.copyWithin(w, r, r + take);
          w += take;
        }
        r += take;
        this.left -= take;
        if (this.left === 0) this.code = -1;
        continue;
      }
      if (this.code === -1) {
        const code = chunk[r] as number;
        if (!CONSUMED.has(code)) {
          this.write(chunk, w);
          this.flush();
          this.detach(chunk.subarray(r));
          return;
        }
        this.code = code;
        r += 1;
        this.lengthBytes = 0;
        this.length = 0;
        if (r + 4 <= n) {
          this.length = chunk.readUInt32BE(r);
          this.lengthBytes = 4;
          r += 4;
        }
      } else {
        this.length = this.length * 256 + (chunk[r] as number);
        this.lengthBytes += 1;
        r += 1;
      }
      if (this.lengthBytes === 4) {
        // The length counts its own four bytes.
        this.left = this.length - 4;
        if (this.left === 0) this.code = -1;
      }
    }
    this.write(chunk, w);
  }

  /** Copies the kept bytes into the block being filled; a full block goes to the file. */
  private write(chunk: Buffer, bytes: number): void {
    if (this.sinkError) return;
    let from = 0;
    while (from < bytes) {
      const take = Math.min(bytes - from, BLOCK_BYTES - this.used);
      this.block.set(
        from === 0 && take === chunk.length ? chunk : chunk.subarray(from, from + take),
        this.used,
      );
      this.used += take;
      from += take;
      if (this.used === BLOCK_BYTES) this.flush();
    }
  }

  /**
   * Writes the block filled so far and takes another from the pool (blocks come back once
   * written): no allocation per socket chunk, and the file stream's work is per MiB.
   */
  private flush(): void {
    if (this.used === 0 || this.sinkError) return;
    const block = this.block;
    const written = this.sink.write(block.subarray(0, this.used), () => blocks.give([block]));
    this.block = blocks.take(BLOCK_BYTES);
    this.used = 0;
    if (!written && this.socket) {
      const socket = this.socket;
      socket.pause();
      this.sink.once('drain', () => {
        if (this.socket === socket) socket.resume();
      });
    }
  }

  /** The block being filled goes back to the pool: the relay writes nothing more. */
  private releaseBlock(): void {
    blocks.give([this.block]);
    this.block = Buffer.alloc(0);
    this.used = 0;
  }

  /** Gives the connection back to pg, with what it has to read next. */
  private detach(rest?: Buffer): void {
    const socket = this.socket;
    const listener = this.pgListener;
    if (!socket || !listener) return;
    this.socket = undefined;
    lendReads(socket, false);
    socket.removeListener('data', this.onData);
    socket.on('data', listener);
    socket.resume();
    // A chunk may be a view of the shared read buffer (session/shared-read-socket.ts): pg gets a copy to keep.
    if (rest && rest.length > 0) listener(Buffer.from(rest));
  }

  handleCommandComplete(message: { text?: string }): void {
    const match = /^COPY (\d+)$/.exec(message.text ?? '');
    if (match) this.rows = Number(match[1]);
  }

  handleReadyForQuery(): void {
    this.finish(undefined);
  }

  handleError(error: Error): void {
    // Reached when the connection broke as well: pg's own reader takes its socket back.
    this.detach();
    this.finish(error);
  }

  private finish(error: Error | undefined): void {
    if (this.settled) return;
    this.settled = true;
    clearInterval(this.watchdog);
    const failed = error ?? this.sinkError;
    if (failed) {
      this.sink.destroy();
      this.releaseBlock();
      this.reject(failed);
      return;
    }
    this.flush();
    this.releaseBlock();
    this.sink.end();
    finished(this.sink).then(
      () => {
        if (this.sinkError) this.reject(this.sinkError);
        else if (this.rows === undefined)
          this.reject(new Error('PostgreSQL ended the COPY without its row count'));
        else this.resolve(this.rows);
      },
      (failure: Error) => this.reject(this.sinkError ?? failure),
    );
  }
}
