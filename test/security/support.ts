import { createServer, type Server, type Socket } from 'node:net';
import { expect } from 'vitest';
import { basic, type TestSluice } from '../support/sluice.js';

/**
 * A TCP listener on loopback that counts every connection made to it: an attack that reaches the
 * network from the engine shows up here, whatever the engine answered. It answers each with an
 * HTTP 403 in S3's words, so an HTTP or S3 client gives up at once instead of retrying.
 */
export async function startListener(): Promise<{
  port: number;
  connections(): number;
  close(): Promise<void>;
}> {
  let count = 0;
  const body = '<Error><Code>AccessDenied</Code><Message>refused by the test</Message></Error>';
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    count += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.end(
      `HTTP/1.1 403 Forbidden\r\ncontent-type: application/xml\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('listener has no port');
  return {
    port: address.port,
    connections: () => count,
    // A client may keep its connection open after the answer (keep-alive): closed here.
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

/** An API key of `role` in the test's organization, as a Basic authorization header. */
export async function keyOf(s: TestSluice, role: 'admin' | 'developer' | 'read-only'): Promise<string> {
  const response = await s.request({
    method: 'POST',
    url: `/v1/organizations/${s.organizationId}/keys`,
    body: { role, name: `${role} key` },
  });
  expect(response.statusCode).toBe(200);
  return basic(response.json.result.id, response.json.result.secret);
}

/** Runs one statement through the query endpoint with `auth`; the whole answer, whatever it is. */
export async function attempt(s: TestSluice, auth: string, sql: string) {
  const response = await s.request({
    method: 'POST',
    url: `/v1/organizations/${s.organizationId}/services/${s.serviceId}/query`,
    body: { sql },
    auth,
  });
  return { status: response.statusCode, body: response.body, json: response.json };
}
