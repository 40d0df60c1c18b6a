import { isErrorCode } from '../errors.js';
import type { Backend, PipesApi, Row } from './backend.js';
import { CliError, HttpClient } from './http-client.js';

export { CliError };

/** The CLI through a server's /v1 API, with an API key (needed while a server holds the data). */
export class HttpBackend implements Backend {
  private readonly authorization: string;
  private readonly client: HttpClient;

  constructor(baseUrl: string, keyId: string, keySecret: string, ca?: string) {
    this.client = new HttpClient(baseUrl, ca);
    this.authorization = `Basic ${Buffer.from(`${keyId}:${keySecret}`).toString('base64')}`;
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const answer = await this.client.send(
      method,
      path,
      {
        authorization: this.authorization,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body === undefined ? undefined : JSON.stringify(body),
    );
    const payload = parseJson(answer.text) as { result?: T; error?: string; code?: string };
    const ok = answer.status >= 200 && answer.status < 300;
    if (!ok) {
      const code = isErrorCode(payload.code) ? payload.code : undefined;
      throw new CliError(payload.error ?? `${method} ${path} answered ${answer.status}`, code);
    }
    return payload.result as T;
  }

  private org(org: string) {
    return `/v1/organizations/${encodeURIComponent(org)}`;
  }

  listOrganizations = () => this.call<Row[]>('GET', '/v1/organizations');
  createOrganization = (name: string) => this.call<Row>('POST', '/v1/organizations', { name });
  listServices = (org: string) => this.call<Row[]>('GET', `${this.org(org)}/services`);
  createService = (org: string, body: { name: string; kind?: string }) =>
    this.call<Row>('POST', `${this.org(org)}/services`, body);
  listKeys = (org: string) => this.call<Row[]>('GET', `${this.org(org)}/keys`);
  createKey = (org: string, body: { name?: string; role: string }) =>
    this.call<Row>('POST', `${this.org(org)}/keys`, body);
  revokeKey = (org: string, keyId: string) =>
    this.call<Row>('DELETE', `${this.org(org)}/keys/${encodeURIComponent(keyId)}`);
  listTeams = (org: string) => this.call<Row[]>('GET', `${this.org(org)}/teams`);
  createTeam = (org: string, name: string) => this.call<Row>('POST', `${this.org(org)}/teams`, { name });
  listTokens = (org: string, team: string) =>
    this.call<Row[]>('GET', `${this.org(org)}/teams/${encodeURIComponent(team)}/tokens`);
  createToken = (org: string, team: string, body: { user: string; name?: string }) =>
    this.call<Row>('POST', `${this.org(org)}/teams/${encodeURIComponent(team)}/tokens`, body);
  revokeToken = async (org: string, team: string, tokenId: string) => {
    await this.call(
      'DELETE',
      `${this.org(org)}/teams/${encodeURIComponent(team)}/tokens/${encodeURIComponent(tokenId)}`,
    );
  };
  query = (org: string, service: string, sql: string) =>
    this.call<{ columns: { name: string }[]; rows: Row[] }>(
      'POST',
      `${this.org(org)}/services/${encodeURIComponent(service)}/query`,
      { sql },
    );
  pipes: PipesApi = {
    list: (org, service) => this.call<Row[]>('GET', this.pipesOf(org, service)),
    get: (org, service, pipe) => this.call<Row>('GET', this.pipesOf(org, service, pipe)),
    status: (org, service, pipe) => this.call<Row>('GET', `${this.pipesOf(org, service, pipe)}/status`),
    create: (org, service, body) => this.call<Row>('POST', this.pipesOf(org, service), body),
    command: (org, service, pipe, command) =>
      this.call<Row>('PATCH', `${this.pipesOf(org, service, pipe)}/state`, { command }),
    remove: async (org, service, pipe) => {
      await this.call('DELETE', this.pipesOf(org, service, pipe));
    },
  };

  /** The pipes of a service, or one of them. */
  private pipesOf(org: string, service: string, pipe?: string) {
    const base = `${this.org(org)}/services/${encodeURIComponent(service)}/pipes`;
    return pipe === undefined ? base : `${base}/${encodeURIComponent(pipe)}`;
  }

  close = async () => {};
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return {};
  }
}
