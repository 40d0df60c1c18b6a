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
  stop(): Promise<void>;
}

const HTTP2_PREFACE = 'PRI * HTTP/2.0';
const TARGET = /x-amz-target:\s*[A-Za-z0-9_]+\.([A-Za-z]+)/gi;

/**
 * A TCP proxy in front of `upstream` that passes every byte on unchanged and notes what it can
 * read: the operation of each HTTP/1.1 call, and which connections speak HTTP/2 (whose headers
 * are compressed: only counted). A test learns from it which API a client really used.
 */
export async function startTcpTap(upstream: string): Promise<TcpTap> {
  const target = new URL(upstream);
  const http1Calls: string[] = [];
  let http2Connections = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const server = connect(Number(target.port), target.hostname);
    for (const socket of [client, server]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        server.destroy();
      });
    }
    let http2: boolean | undefined;
    client.on('data', (chunk: Buffer) => {
      if (http2 === undefined) {
        http2 = chunk.subarray(0, HTTP2_PREFACE.length).toString('latin1') === HTTP2_PREFACE;
        if (http2) http2Connections += 1;
      }
      if (!http2)
        for (const match of chunk.toString('latin1').matchAll(TARGET)) http1Calls.push(match[1] ?? '');
      server.write(chunk);
    });
    server.pipe(client);
    client.on('end', () => server.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
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
