import { type OnReadOpts, Socket, type SocketConstructorOpts } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * Every plain (non-TLS) PostgreSQL connection reads into this one buffer (net.Socket's `onread`):
 * a socket left to itself allocates a Buffer of up to 64 KiB for every read, and at COPY speed
 * that is hundreds of MB a second of short-lived external memory, each 64 MB of which starts a
 * full garbage collection of the process's heap (bench/postgres.ts). One buffer serves every
 * socket: each read's callback runs before the next read of any socket.
 */
const READS = Buffer.allocUnsafeSlow(1024 * 1024);
/** Sockets whose reads go to their listener as views of READS (the COPY relay while it runs). */
const lent = new WeakSet<Duplex>();

/** A socket for pg's `stream` option: pg sees ordinary 'data' chunks, each a copy of its own. */
export function sharedReadSocket(): Socket {
  const onread: OnReadOpts = {
    buffer: READS,
    callback: (bytes) => {
      const view = READS.subarray(0, bytes);
      // pg keeps a message's start until its end arrives: it gets bytes nobody overwrites.
      socket.emit('data', lent.has(socket) ? view : Buffer.from(view));
      return true;
    },
  };
  // Node takes `onread` in the constructor too (lib/net.js); its types list it for connect only.
  const socket: Socket = new Socket({ onread } as SocketConstructorOpts);
  return socket;
}

/**
 * Hands `socket`'s reads to its 'data' listener as views of the shared buffer, valid only during
 * the listener's call (`lend` true), or copies again (false). A socket of another kind (TLS) is
 * left as it is: its chunks are its listener's to keep anyway.
 */
export function lendReads(socket: Duplex, lend: boolean): void {
  if (lend) lent.add(socket);
  else lent.delete(socket);
}
