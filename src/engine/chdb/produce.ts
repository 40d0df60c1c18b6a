import { constants, open } from 'node:fs';
import { Socket } from 'node:net';
import { finished } from 'node:stream/promises';
import { promisify } from 'node:util';
import type { Session } from 'chdb';

const openFile = promisify(open);

/** How often a producer looks again for the FIFO's reader. */
const READER_POLL_MS = 5;

/**
 * Runs `sql` (a SELECT) and writes its rows as Native blocks into the FIFO open on `fd` (see
 * openWhenRead) as the engine makes them, each written before the next is asked for (so memory
 * holds a block, whatever the size); returns the rows written. A reader that stops reading fails
 * the write (EPIPE), and the statement with it.
 */
export async function produceInto(session: Session, sql: string, fd: number): Promise<number> {
  const out = new Socket({ fd, readable: false, writable: true });
  let failure: Error | undefined;
  out.on('error', (error) => {
    failure ??= error;
  });
  let rows = 0;
  try {
    const stream = session.queryStream(sql, { format: 'Native' });
    for await (const chunk of stream) {
      if (failure) {
        stream.cancel();
        throw failure;
      }
      rows += chunk.numRows;
      const raw = chunk.raw();
      await new Promise<void>((resolve, reject) =>
        out.write(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength), (error) =>
          error ? reject(error) : resolve(),
        ),
      );
    }
    out.end();
    await finished(out);
    return rows;
  } finally {
    out.destroy();
  }
}

/**
 * Opens the FIFO for writing once a reader has it open (a non-blocking open fails with ENXIO until
 * then), so no thread ever blocks on it; ENOENT: the FIFO was removed, nobody will read it. A
 * producer waits on a connection of its own (child.ts), never on one of the runtime's shared ones,
 * so loads and producers taken in different orders by the two engines never wait on each other.
 */
export async function openWhenRead(path: string): Promise<number> {
  for (;;) {
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
}
