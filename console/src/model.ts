/** The API's shapes the console reads (README, "API"), only the fields it uses. */

export interface Organization {
  id: string;
  name: string;
}

export interface Service {
  id: string;
  name: string;
}

export interface Pipe {
  id: string;
  name: string;
  state: string;
  source: Record<string, Record<string, unknown>>;
  destination: { database?: string; table: string };
  scaling?: Record<string, unknown>;
  createdAt: string;
}

export interface MinuteOfHistory {
  minute: string;
  rowsPerSecond: number;
  lag: number | null;
}

export interface PipeStatus {
  id: string;
  state: string;
  reason?: string | null;
  rowsWritten?: number;
  bytesWritten?: number;
  badRecords?: number;
  rowsPerSecond?: number;
  lastInsertAt?: string | null;
  lastError?: string | null;
  lastErrorCode?: string | null;
  lastErrorAt?: string | null;
  filesDone?: number;
  filesPending?: number;
  lastHour?: MinuteOfHistory[];
  partitions?: Record<string, unknown>[];
  shards?: Record<string, unknown>[];
  tables?: Record<string, unknown>[];
}

export interface QueryResult {
  columns: { name: string; type: string }[];
  rows: Record<string, unknown>[];
}

/** The kind of a pipe's source: the one key of its `source` object. */
export function sourceKind(pipe: Pipe): string {
  return Object.keys(pipe.source)[0] ?? 'unknown';
}

/** The lag of the last minute the history has, when the source has one. */
export function latestLag(status: PipeStatus | undefined): number | null {
  const minutes = status?.lastHour ?? [];
  for (let i = minutes.length - 1; i >= 0; i--) {
    const lag = minutes[i]?.lag;
    if (lag !== null && lag !== undefined) return lag;
  }
  return null;
}

export const paths = {
  organizations: () => '/v1/organizations',
  services: (org: string) => `/v1/organizations/${e(org)}/services`,
  pipes: (org: string, service: string) => `/v1/organizations/${e(org)}/services/${e(service)}/pipes`,
  pipe: (org: string, service: string, pipe: string) => `${paths.pipes(org, service)}/${e(pipe)}`,
  query: (org: string, service: string) => `/v1/organizations/${e(org)}/services/${e(service)}/query`,
};

/** Ids from the address are written into paths encoded: a crafted link cannot reach another route. */
const e = encodeURIComponent;
