import { request } from 'node:https';
import { privateHostProblem } from '../../../net/index.js';
import type { KafkaConfig } from './connection.js';

const TIMEOUT_MS = 10_000;
const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** The registry cannot be asked (unreachable, refused the credentials, answered nonsense). */
export class RegistryError extends Error {
  readonly code = 'SLUICE_ERR_SCHEMA_REGISTRY';
  constructor(
    message: string,
    readonly field: 'url' | 'credentials' | 'caCertificate',
  ) {
    super(`schema registry: ${message}`);
  }
}

/** What the registry says of one schema id: its Avro schema, or why messages naming it are bad. */
export type SchemaAnswer = { schema: string } | { refused: string };

type RegistryConfig = NonNullable<KafkaConfig['schemaRegistry']>;

/**
 * A Confluent-compatible schema registry (Confluent, Redpanda, Apicurio's ccompat API), read over
 * https with the pipe's CA and PLAIN credentials. Schema ids never change meaning, so an answer is
 * kept for the life of the run; a registry that cannot be asked fails the batch, which is retried.
 */
export class SchemaRegistryClient {
  private readonly answers = new Map<number, SchemaAnswer>();
  private readonly url: URL;
  private checkedHost = false;

  constructor(
    private readonly config: RegistryConfig,
    private readonly allowPrivateSources: boolean,
  ) {
    this.url = new URL(config.url);
  }

  /** The answers for the ids, asking the registry for those not known yet. */
  async schemas(ids: Iterable<number>): Promise<Map<number, SchemaAnswer>> {
    for (const id of new Set(ids)) {
      if (!this.answers.has(id)) this.answers.set(id, await this.fetchSchema(id));
    }
    return this.answers;
  }

  /** Reachable, and the credentials are accepted (it lists its subjects). */
  async check(): Promise<void> {
    await this.get('subjects');
  }

  private async fetchSchema(id: number): Promise<SchemaAnswer> {
    const answer = await this.get(`schemas/ids/${id}`);
    if (answer.status === 404) return { refused: `schema id ${id} is not in the schema registry` };
    const body = answer.body as { schema?: unknown; schemaType?: unknown };
    if (typeof body?.schema !== 'string') {
      throw new RegistryError(`the answer for schema id ${id} holds no schema`, 'url');
    }
    if (body.schemaType !== undefined && body.schemaType !== 'AVRO') {
      return {
        refused: `schema id ${id} is a ${String(body.schemaType)} schema: format AvroConfluent reads Avro`,
      };
    }
    return { schema: body.schema };
  }

  private async get(path: string): Promise<{ status: number; body: unknown }> {
    if (!this.checkedHost && !this.allowPrivateSources) {
      const problem = await privateHostProblem(this.url.hostname, 'SLUICE_ALLOW_PRIVATE_SOURCES');
      if (problem) throw new RegistryError(problem, 'url');
    }
    this.checkedHost = true;
    const base = this.url.href.endsWith('/') ? this.url.href : `${this.url.href}/`;
    const target = new URL(path, base);
    const credentials = this.config.credentials;
    const headers: Record<string, string> = {
      accept: 'application/vnd.schemaregistry.v1+json, application/json',
    };
    if (credentials?.username && credentials.password) {
      headers.authorization = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
    }
    const answer = await httpsGet(target, headers, this.config.caCertificate);
    if (answer.status === 401 || answer.status === 403) {
      throw new RegistryError(`it refused the credentials (HTTP ${answer.status})`, 'credentials');
    }
    if (answer.status !== 200 && answer.status !== 404) {
      throw new RegistryError(`it answered HTTP ${answer.status} for ${target.pathname}`, 'url');
    }
    try {
      return { status: answer.status, body: answer.text ? JSON.parse(answer.text) : undefined };
    } catch {
      throw new RegistryError(`its answer for ${target.pathname} is not JSON`, 'url');
    }
  }
}

function httpsGet(
  target: URL,
  headers: Record<string, string>,
  ca: string | undefined,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      target,
      { method: 'GET', headers, timeout: TIMEOUT_MS, ...(ca ? { ca } : {}) },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_BODY_BYTES) {
            req.destroy(new RegistryError('its answer is larger than 4 MB', 'url'));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new RegistryError(`no answer within ${TIMEOUT_MS / 1000} s`, 'url')));
    req.on('error', (error: Error) => {
      if (error instanceof RegistryError) return reject(error);
      const tls = /certificate|self.signed|TLS|SSL/i.test(error.message);
      reject(
        new RegistryError(
          tls ? `TLS with the registry failed: ${error.message}` : `cannot reach it: ${error.message}`,
          tls ? 'caCertificate' : 'url',
        ),
      );
    });
    req.end();
  });
}
