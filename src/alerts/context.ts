import { NotFoundError, type Problem, ValidationError } from '../errors.js';

/** Who an alerts-area call acts for: a user of a team, itself bound to one organization. */
export interface TeamScope {
  teamId: string;
  organizationId: string;
  userId: string;
}

export interface Page<T> {
  data: T[];
  meta: { total: number; limit: number; offset: number };
}

/** `?limit` (1-1000, default 1000) and `?offset` (default 0), as README, "Alerts area". */
export function pageOf(query: unknown): { limit: number; offset: number } {
  const q = (query ?? {}) as Record<string, unknown>;
  const problems: Problem[] = [];
  const read = (name: string, fallback: number, min: number, max: number) => {
    const raw = q[name];
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (
      typeof raw !== 'string' ||
      raw.trim() === '' ||
      !Number.isInteger(value) ||
      value < min ||
      value > max
    ) {
      problems.push({ path: name, message: `Expected an integer from ${min} to ${max}` });
      return fallback;
    }
    return value;
  };
  const page = { limit: read('limit', 1000, 1, 1000), offset: read('offset', 0, 0, Number.MAX_SAFE_INTEGER) };
  if (problems.length) throw new ValidationError(problems, 'Query');
  return page;
}

const AREA_CODES = {
  Alert: 'SLUICE_ERR_ALERT_NOT_FOUND',
  Webhook: 'SLUICE_ERR_WEBHOOK_NOT_FOUND',
  Dashboard: 'SLUICE_ERR_DASHBOARD_NOT_FOUND',
  Source: 'SLUICE_ERR_ALERT_SOURCE_NOT_FOUND',
  Tile: 'SLUICE_ERR_TILE_NOT_FOUND',
} as const;

/** The 404 of the alerts area names the kind of object: `{"message": "Alert not found"}`. */
export class AreaNotFoundError extends NotFoundError {
  constructor(what: keyof typeof AREA_CODES) {
    super(AREA_CODES[what], what);
    this.message = `${what} not found`;
  }
}

/** One page of a team's objects: the rows asked for by `?limit` and `?offset`, and how many in all. */
export async function listPage<R, T>(
  query: unknown,
  list: (limit: number, offset: number) => Promise<R[]>,
  count: () => Promise<number>,
  toRecord: (row: R) => T,
): Promise<Page<T>> {
  const { limit, offset } = pageOf(query);
  const [rows, total] = await Promise.all([list(limit, offset), count()]);
  return { data: rows.map(toRecord), meta: { total, limit, offset } };
}
