import { request } from 'node:https';
import type { ErrorCode } from '../../../errors.js';
import { privateHostProblem, publicOnlyLookup } from '../../../net/index.js';
import type { PipeConfig } from '../../model.js';
import { isTlsCode } from '../failure-code.js';

/** A whole request's deadline. */
const TIMEOUT_MS = 10_000;
/** An answer larger than this is refused: a schema is a few KB. */
const MAX_BODY_BYTES = 1024 * 1024;
/** Schemas kept per run; the oldest goes first (a topic rarely has more than a few versions). */
const MAX_CACHED = 256;

/** The registry cannot be asked (unreachable, refused the credentials, answered nonsense). */
export class RegistryError extends Error {
  readonly code: ErrorCode = 'SLUICE_ERR_SCHEMA_REGISTRY';

  constructor(
    message: string,
    readonly field: 'url' | 'credentials' | 'caCertificate',
  ) {
    super(`schema registry: ${message}`);
  }
}

/** What the registry says of one schema id: its Avro schema, or why messages naming it are bad. */
export type SchemaAnswer = { schema: string } | { refused: string };

type RegistryConfig = NonNullable<NonNullable<PipeConfig['source']['kafka']>['schemaRegistry']>;

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

  /**
   * The answers for the ids, asking the registry for those not known yet. A schema is kept (ids
   * never change meaning); an id the registry does not know is asked again next time (it may be
   * registered late, or a replica may lag).
   */
  async schemas(ids: Iterable<number>): Promise<Map<number, SchemaAnswer>> {
    const answers = new Map<number, SchemaAnswer>();
    for (const id of new Set(ids)) {
      let answer = this.answers.get(id);
      if (!answer) {
        answer = await this.fetchSchema(id);
        if ('schema' in answer) this.keep(id, answer);
      }
      answers.set(id, answer);
    }
    return answers;
  }

  private keep(id: number, answer: SchemaAnswer): void {
    const oldest = this.answers.keys().next();
    if (this.answers.size >= MAX_CACHED && !oldest.done) this.answers.delete(oldest.value);
    this.answers.set(id, answer);
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
    // A readable refusal first; each connection's own lookup refuses private addresses as well.
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
    const answer = await httpsGet(target, headers, this.config.caCertificate, this.allowPrivateSources);
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
  allowPrivate: boolean,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const options = {
      method: 'GET',
      headers,
      // The whole request's deadline, not only the socket's idle time.
      signal: AbortSignal.timeout(TIMEOUT_MS),
      ...(allowPrivate ? {} : { lookup: publicOnlyLookup }),
      ...(ca ? { ca } : {}),
    };
    const req = request(target, options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_BODY_BYTES) {
          req.destroy(new RegistryError('its answer is larger than 1 MB', 'url'));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', (error: Error) => reject(asRegistryError(error)));
    });
    req.on('error', (error: Error) => reject(asRegistryError(error)));
    req.end();
  });
}

function asRegistryError(error: Error): RegistryError {
  if (error instanceof RegistryError) return error;
  if (error.name === 'AbortError' || error.name === 'TimeoutError') {
    return new RegistryError(`no answer within ${TIMEOUT_MS / 1000} s`, 'url');
  }
  const code = (error as NodeJS.ErrnoException).code;
  const tls = code !== undefined && isTlsCode(code);
  return new RegistryError(
    tls ? `TLS with the registry failed: ${error.message}` : `cannot reach it: ${error.message}`,
    tls ? 'caCertificate' : 'url',
  );
}
