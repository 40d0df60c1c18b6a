import { createRequire } from 'node:module';
import { createServer, type Server, Socket } from 'node:net';
import pg from 'pg';
import { LogicalReplicationService, PgoutputPlugin } from 'pg-logical-replication';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  PG_LOGICAL_REPLICATION_VERSION,
  PG_VERSION,
  pgReaderOf,
  replicationSocketOf,
  sendQuery,
  socketOf,
} from './pg-internals.js';

// The adapter reads members pg does not document (pg-internals.ts): an update of pg that moves
// them must fail here, not in a snapshot. A local TCP server that hangs up on every connection
// stands in for PostgreSQL: what is checked is what pg sets up on its own side as it connects.

const require = createRequire(import.meta.url);
const versionOf = (name: string) => (require(`${name}/package.json`) as { version: string }).version;

let server: Server;
let port: number;

beforeAll(async () => {
  server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe('the pg internals the COPY relay and the replication stream read', () => {
  it('were written for the pg and pg-logical-replication installed', () => {
    expect(versionOf('pg')).toBe(PG_VERSION);
    expect(versionOf('pg-logical-replication')).toBe(PG_LOGICAL_REPLICATION_VERSION);
  });

  it("a client's connection has its socket and a query method before it connects", () => {
    const socket = new Socket();
    const client = new pg.Client({ host: '127.0.0.1', port, stream: () => socket });
    expect(socketOf(client.connection)).toBe(socket);
    expect(typeof client.connection.query).toBe('function');
  });

  it("pg's reader is the one 'data' listener of a plain connection's socket, and sendQuery sends a Query", async () => {
    // A server that answers nothing and keeps what it is sent.
    let received = Buffer.alloc(0);
    const listening = createServer((socket) =>
      socket.on('data', (chunk: Buffer) => {
        received = Buffer.concat([received, chunk]);
      }),
    );
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    try {
      const { port: silentPort } = listening.address() as { port: number };
      const client = new pg.Client({ host: '127.0.0.1', port: silentPort, user: 'u', database: 'd' });
      const socket = socketOf(client.connection);
      expect(pgReaderOf(socket)).toBeUndefined();
      socket.once('connect', () => sendQuery(client.connection, 'SELECT 1'));
      const connecting = client.connect().catch((error: Error) => error);
      // pg attaches its parser as it starts to connect a plain socket.
      expect(pgReaderOf(socket)).toBeTypeOf('function');
      const query = Buffer.from([0x51, 0, 0, 0, 13, ...Buffer.from('SELECT 1\0')]);
      await vi.waitFor(() => expect(received.includes(query)).toBe(true));
      socket.destroy();
      expect(await connecting).toBeInstanceOf(Error);
    } finally {
      listening.close();
    }
  });

  it("a replication service's client socket is found, and destroying it ends the connection", async () => {
    const service = new LogicalReplicationService({ host: '127.0.0.1', port, user: 'u', database: 'd' });
    expect(replicationSocketOf(service)).toBeUndefined();
    const plugin = new PgoutputPlugin({ protoVersion: 1, publicationNames: ['p'] });
    const connecting = service.subscribe(plugin, 'slot').catch((error: Error) => error);
    await new Promise((resolve) => setImmediate(resolve));
    const socket = replicationSocketOf(service);
    expect(socket).toBeDefined();
    socket?.destroy();
    expect(socket?.destroyed).toBe(true);
    expect(await connecting).toBeInstanceOf(Error);
    await service.destroy();
  });
});
