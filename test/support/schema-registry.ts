import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeCertificates } from './kafka/certs.js';

// A schema registry of the tests' own, speaking the part of Confluent's REST API a consumer uses
// (GET /subjects, GET /schemas/ids/{id}), over https with a private CA and basic auth. Confluent's
// registry is not on Maven Central and cannot run here; Sluice reaches this one through the same
// client it uses for a real registry.

export interface RunningRegistry {
  url: string;
  caPem: string;
  username: string;
  password: string;
  /** Registers an Avro schema (as POST /subjects/{subject}/versions would) and returns its id. */
  register(schema: unknown, schemaType?: string): number;
  /** How many schema lookups by id it answered. */
  lookups: () => number;
  close(): Promise<void>;
}

export async function startSchemaRegistry(): Promise<RunningRegistry> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-registry-'));
  const certificates = await makeCertificates(dir);
  const [cert, key] = await Promise.all([
    readFile(join(dir, 'broker.pem'), 'utf8'),
    readFile(join(dir, 'broker.key'), 'utf8'),
  ]);
  const username = 'registry-user';
  const password = randomBytes(12).toString('hex');
  const expected = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  const schemas = new Map<number, { schema: string; schemaType?: string }>();
  let lookups = 0;
  const server: Server = createServer({ cert, key }, (req, res) => {
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/vnd.schemaregistry.v1+json' });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== expected)
      return reply(401, { error_code: 401, message: 'Unauthorized' });
    if (req.method === 'GET' && req.url === '/subjects') return reply(200, ['test-value']);
    const byId = /^\/schemas\/ids\/(\d+)$/.exec(req.url ?? '');
    if (req.method === 'GET' && byId) {
      lookups += 1;
      const found = schemas.get(Number(byId[1]));
      return found ? reply(200, found) : reply(404, { error_code: 40403, message: 'Schema not found' });
    }
    return reply(404, { error_code: 404, message: 'HTTP 404 Not Found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://localhost:${port}`,
    caPem: certificates.caPem,
    username,
    password,
    register(schema, schemaType) {
      const id = schemas.size + 1;
      schemas.set(id, { schema: JSON.stringify(schema), ...(schemaType ? { schemaType } : {}) });
      return id;
    },
    lookups: () => lookups,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
