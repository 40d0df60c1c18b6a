/**
 * What the identity commands of the CLI need, whether they go through a running server's HTTP API
 * or open the data directory themselves. Both return the public views of the /v1 API.
 */
export interface Row {
  [field: string]: unknown;
}

export interface Backend {
  listOrganizations(): Promise<Row[]>;
  createOrganization(name: string): Promise<Row>;
  listServices(org: string): Promise<Row[]>;
  createService(org: string, body: { name: string; kind?: string }): Promise<Row>;
  listKeys(org: string): Promise<Row[]>;
  createKey(org: string, body: { name?: string; role: string }): Promise<Row>;
  revokeKey(org: string, keyId: string): Promise<Row>;
  listTeams(org: string): Promise<Row[]>;
  createTeam(org: string, name: string): Promise<Row>;
  listTokens(org: string, team: string): Promise<Row[]>;
  createToken(org: string, team: string, body: { user: string; name?: string }): Promise<Row>;
  revokeToken(org: string, team: string, tokenId: string): Promise<void>;
  query(org: string, service: string, sql: string): Promise<{ columns: { name: string }[]; rows: Row[] }>;
  /** Only through a running server: pipes run there (the data directory alone has no runtime). */
  pipes?: PipesApi;
  close(): Promise<void>;
}

/** The /v1 pipe endpoints of one service. */
export interface PipesApi {
  list(org: string, service: string): Promise<Row[]>;
  get(org: string, service: string, pipe: string): Promise<Row>;
  status(org: string, service: string, pipe: string): Promise<Row>;
  create(org: string, service: string, body: unknown): Promise<Row>;
  command(org: string, service: string, pipe: string, command: 'start' | 'stop'): Promise<Row>;
  remove(org: string, service: string, pipe: string): Promise<void>;
}
