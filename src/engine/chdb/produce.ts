import { close, constants, open } from 'node:fs';
import { Socket } from 'node:net';
import { finished } from 'node:stream/promises';
import { promisify } from 'node:util';
import type { Session } from 'chdb';

const openFile = promisify(open);
const closeFile = promisify(close);

/** How often a producer looks again for a FIFO's reader. */
const READER_POLL_MS = 5;

/** One FIFO a producer writes into, and whether a write to it is in flight. */
interface Output {
  socket: Socket;
  writing: boolean;
}

/**
 * The FIFOs of one producer (src/pipes/records/stream-load.ts): each joins once its reader has it
 * open, so a producer starts as soon as one load reads, and never waits for a load that waits
 * for an engine connection (those loads read an end of file from the runtime once the producer
 * ends). A block goes to a FIFO with no write in flight. The first failure (an open refused, a
 * write refused because its reader went away) is the producer's.
 */
class Fifos {
  private readonly outputs: Output[] = [];
  private readonly waiting: (() => void)[] = [];
  private opening: number;
  private ended = false;
  private failure: Error | undefined;

  constructor(paths: readonly string[]) {
    this.opening = paths.length;
    for (const path of paths) {
      openWhenRead(path, () => this.ended).then(
        (fd) => this.opened(fd),
        (error: Error) => {
          this.opening -= 1;
          this.failed(error);
        },
      );
    }
  }

  /** An output with no write in flight, once there is one; the failure, once there is one. */
  async free(): Promise<Output> {
    for (;;) {
      if (this.failure) throw this.failure;
      const free = this.outputs.find((output) => !output.writing);
      if (free) return free;
      if (this.opening === 0 && this.outputs.length === 0) throw new Error('no FIFO was opened');
      await this.changed();
    }
  }

  write(output: Output, bytes: Buffer): void {
    output.writing = true;
    output.socket.write(bytes, (error) => {
      output.writing = false;
      if (error) this.failed(error);
      else this.wake();
    });
  }

  /** Waits for the writes in flight, then ends every FIFO opened; a FIFO opened later is closed at once. */
  async end(): Promise<void> {
    await this.writesEnded(() => this.failure !== undefined);
    this.ended = true;
    if (this.failure) throw this.failure;
    for (const output of this.outputs) output.socket.end();
    await Promise.all(this.outputs.map((output) => finished(output.socket)));
  }

  /**
   * Closes every FIFO once its write in flight has ended, well or not: a producer that failed on
   * its source leaves whole blocks, which the engine loads, and then an end of file.
   */
  async close(): Promise<void> {
    this.ended = true;
    await this.writesEnded(() => false);
    for (const output of this.outputs) output.socket.destroy();
  }

  /** Until no write is in flight, or `stop` says so. */
  private async writesEnded(stop: () => boolean): Promise<void> {
    while (!stop() && this.outputs.some((output) => output.writing)) await this.changed();
  }

  /** Until an output opens, a write ends or something fails. */
  private changed(): Promise<void> {
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private opened(fd: number | undefined): void {
    this.opening -= 1;
    if (fd === undefined) return;
    if (this.ended) {
      // Its reader reads an end of file.
      closeFile(fd).catch((error: Error) => this.failed(error));
      return;
    }
    const socket = new Socket({ fd, readable: false, writable: true });
    socket.on('error', (error) => this.failed(error));
    this.outputs.push({ socket, writing: false });
    this.wake();
  }

  private failed(error: Error): void {
    this.failure ??= error;
    this.wake();
  }

  private wake(): void {
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}

/**
 * Runs `sql` (a SELECT) and writes its rows as Native blocks into the FIFOs at `paths` as the
 * engine makes them, each block into a FIFO whose last write has ended, and asked for only once
 * one has (so memory holds a block per FIFO, whatever the size; Native blocks stand alone, so
 * each FIFO holds a whole stream of its own); returns the rows written. A reader that stops
 * reading fails the write (EPIPE), and the statement with it.
 */
export async function produceInto(session: Session, sql: string, paths: readonly string[]): Promise<number> {
  const fifos = new Fifos(paths);
  let rows = 0;
  try {
    // Not started before a FIFO is read: a load that failed before it read ends the wait.
    await fifos.free();
    const stream = session.queryStream(sql, { format: 'Native' });
    const chunks = stream[Symbol.asyncIterator]();
    for (;;) {
      let output: Output;
      try {
        output = await fifos.free();
      } catch (error) {
        stream.cancel();
        throw error;
      }
      const next = await chunks.next();
      if (next.done) break;
      rows += next.value.numRows;
      const raw = next.value.raw();
      fifos.write(output, Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength));
    }
    await fifos.end();
    return rows;
  } finally {
    await fifos.close();
  }
}

/**
 * Opens the FIFO for writing once a reader has it open (a non-blocking open fails with ENXIO until
 * then), so no thread ever blocks on it; ENOENT: the FIFO was removed, nobody will read it;
 * undefined: given up (`abandoned`). A producer waits on a connection of its own (child.ts), never
 * on one of the runtime's shared ones, so loads and producers taken in different orders by the
 * two engines never wait on each other.
 */
async function openWhenRead(path: string, abandoned: () => boolean): Promise<number | undefined> {
  while (!abandoned()) {
    try {
      // A plain descriptor, not a FileHandle: the socket owns it and closes it.
      return await openFile(path, constants.O_WRONLY | constants.O_NONBLOCK);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new Error(`the load of ${path} stopped before it read (FIFO removed)`);
      if (code !== 'ENXIO') throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, READER_POLL_MS));
  }
  return undefined;
}
