import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postPublic } from './public-post.js';

describe('postPublic', () => {
  let server: Server;
  let port = 0;
  const bodies: string[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => {
        body += chunk;
      });
      request.on('end', () => {
        bodies.push(body);
        response.statusCode = request.url === '/moved' ? 302 : 204;
        response.setHeader('location', '/elsewhere');
        response.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const options = { headers: { 'content-type': 'application/json' }, body: '{"a":1}', timeoutMs: 5000 };

  it('refuses, when it connects, a name that resolves to a private address: no check made earlier can be bypassed by the name resolving again', async () => {
    const before = bodies.length;
    await expect(
      postPublic(new URL(`http://localhost:${port}/`), { ...options, allowPrivate: false }),
    ).rejects.toMatchObject({ code: 'SLUICE_ERR_PRIVATE_ADDRESS' });
    expect(bodies.length).toBe(before);
  });

  it('posts the body and answers the status, without following a redirect', async () => {
    await expect(
      postPublic(new URL(`http://localhost:${port}/`), { ...options, allowPrivate: true }),
    ).resolves.toBe(204);
    expect(bodies.at(-1)).toBe('{"a":1}');
    await expect(
      postPublic(new URL(`http://localhost:${port}/moved`), { ...options, allowPrivate: true }),
    ).resolves.toBe(302);
  });
});
