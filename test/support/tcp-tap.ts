import type { AddressInfo } from 'node:net';
import { connect, createServer, type Socket } from 'node:net';

/** What a tap saw pass between a client and a server. */
export interface TcpTap {
  /** http://127.0.0.1:port */
  endpoint: string;
  /** The AWS API calls made over HTTP/1.1 (their X-Amz-Target operation names), in order. */
  readonly http1Calls: string[];
  /** Connections that opened with HTTP/2's preface (h2c, as the SDK's HTTP/2 handler speaks it). */
  readonly http2Connections: number;
  /** The port clients connect to (for clients that take a host and a port, not a URL). */
  port: number;
  /**
   * A network that drops everything without a reset, both ways, as a dropped route does: every
   * connection stays open and nothing passes, and new ones are accepted and hear nothing. With
   * `only`, just the connections whose first bytes from the client it picks; with `afterBytes`,
   * each of those once the server has sent it that many bytes.
   */
  silence(only?: (opening: Buffer) => boolean, options?: { afterBytes?: number }): void;
  /** The network is back: what went silent is reset (both ends), new connections pass again. */
  restore(): void;
  stop(): Promise<void>;
}

const HTTP2_PREFACE = 'PRI * HTTP/2.0';
const TARGET = /x-amz-target:\s*[A-Za-z0-9_]+\.([A-Za-z]+)/gi;

/**
 * A TCP proxy in front of `upstream` (a URL with a host and a port) that passes every byte on
 * unchanged and notes what it can read: the operation of each HTTP/1.1 call, and which connections
 * speak HTTP/2 (whose headers are compressed: only counted). A test learns from it which API a
 * client really used; it can also make the network between them go silent.
 */
export async function startTcpTap(upstream: string): Promise<TcpTap> {
  const target = new URL(upstream);
  const http1Calls: string[] = [];
  let http2Connections = 0;
  /** Which connections are silent now (undefined: none). */
  let silencing: ((opening: Buffer) => boolean) | undefined;
  let silentAfter = 0;
  const sockets = new Set<Socket>();
  const pairs = new Set<{ sockets: Socket[]; opening: Buffer | undefined; fromServer: number }>();
  const server = createServer((client) => {
    const server = connect(Number(target.port), target.hostname);
    const pair = { sockets: [client, server], opening: undefined as Buffer | undefined, fromServer: 0 };
    pairs.add(pair);
    const silent = () =>
      silencing?.(pair.opening ?? Buffer.alloc(0)) === true && pair.fromServer >= silentAfter;
    for (const socket of [client, server]) {
      sockets.add(socket);
      socket.on('close', () => {
        sockets.delete(socket);
        pairs.delete(pair);
      });
      socket.on('error', () => {
        client.destroy();
        server.destroy();
      });
    }
    let http2: boolean | undefined;
    client.on('data', (chunk: Buffer) => {
      pair.opening ??= chunk;
      if (silent()) return;
      if (http2 === undefined) {
        http2 = chunk.subarray(0, HTTP2_PREFACE.length).toString('latin1') === HTTP2_PREFACE;
        if (http2) http2Connections += 1;
      }
      if (!http2)
        for (const match of chunk.toString('latin1').matchAll(TARGET)) http1Calls.push(match[1] ?? '');
      server.write(chunk);
    });
    server.on('data', (chunk: Buffer) => {
      if (silent()) return;
      pair.fromServer += chunk.length;
      client.write(chunk);
    });
    client.on('end', () => {
      if (!silent()) server.end();
    });
    server.on('end', () => {
      if (!silent()) client.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    silence(only = () => true, options = {}) {
      silencing = only;
      silentAfter = options.afterBytes ?? 0;
    },
    restore() {
      const picked = silencing;
      silencing = undefined;
      for (const pair of pairs)
        if (picked?.(pair.opening ?? Buffer.alloc(0))) for (const socket of pair.sockets) socket.destroy();
    },
    http1Calls,
    get http2Connections() {
      return http2Connections;
    },
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
