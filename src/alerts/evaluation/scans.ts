import type { AlertRow } from '../../store/index.js';
import type { TeamScope } from '../context.js';
import type { TileSelect } from './tile-query.js';
import type { QueriedTile } from './tile-run.js';
import { intervalMs, type Window } from './windows.js';

export type EvaluatedAlert = AlertRow & {
  evaluatedUntil: Date | null;
  lastNotifiedAt: Date | null;
  organizationId: string;
};

/** The alerts on one tile and interval, with the windows each has to evaluate. */
export type AlertGroup = { alert: EvaluatedAlert; windows: Window[] }[];

export interface Range {
  start: Date;
  end: Date;
  intervalSeconds: number;
}

/** Groups whose tiles read one source the same way over the same range: one query for all. */
export interface Scan {
  scope: TeamScope;
  sourceId: string;
  groupBy: string | undefined;
  range: Range;
  /** Distinct selects, each a column of the scan's query. */
  selects: TileSelect[];
  /** Each group with the index of its tile's select in `selects`. */
  groups: { group: AlertGroup; column: number }[];
  /** Each select's column, by its JSON text. */
  columns: Map<string, number>;
}

/** The most selects one scan's query computes, so its text and its result stay a bounded size. */
const MOST_SELECTS_PER_SCAN = 200;

/** The range a group's query covers: every window of every alert in it. */
export function rangeOf(group: AlertGroup): Range {
  const windows = group.flatMap((member) => member.windows);
  return {
    start: new Date(Math.min(...windows.map((w) => w.start.getTime()))),
    end: new Date(Math.max(...windows.map((w) => w.end.getTime()))),
    intervalSeconds: intervalMs((group[0] as AlertGroup[number]).alert.interval) / 1000,
  };
}

export function scopeOf(group: AlertGroup): TeamScope {
  const { alert } = group[0] as AlertGroup[number];
  return { teamId: alert.teamId, organizationId: alert.organizationId, userId: '' };
}

/**
 * Sorts the tick's groups into scans (tiles of one team on one source, with the same grouping, over
 * the same range, read in one query) and groups queried alone: those whose tile is gone, and
 * those no other group shares a scan with. Equal selects share one column.
 */
export function planScans(
  groups: AlertGroup[],
  tilesOf: (group: AlertGroup) => QueriedTile | undefined,
): { scans: Scan[]; alone: AlertGroup[] } {
  const byKey = new Map<string, Scan>();
  const scans: Scan[] = [];
  const alone: AlertGroup[] = [];
  for (const group of groups) {
    const tile = tilesOf(group);
    const select = tile?.config.select[0];
    if (!tile || !select) {
      alone.push(group);
      continue;
    }
    const scope = scopeOf(group);
    const range = rangeOf(group);
    const groupBy = tile.config.groupBy || undefined;
    const key = JSON.stringify([
      scope.teamId,
      tile.config.sourceId,
      groupBy ?? null,
      range.start.getTime(),
      range.end.getTime(),
      range.intervalSeconds,
    ]);
    let scan = byKey.get(key);
    if (!scan || scan.selects.length >= MOST_SELECTS_PER_SCAN) {
      scan = {
        scope,
        sourceId: tile.config.sourceId,
        groupBy,
        range,
        selects: [],
        groups: [],
        columns: new Map(),
      };
      byKey.set(key, scan);
      scans.push(scan);
    }
    const text = JSON.stringify(select);
    let column = scan.columns.get(text);
    if (column === undefined) {
      column = scan.selects.push(select) - 1;
      scan.columns.set(text, column);
    }
    scan.groups.push({ group, column });
  }
  for (const scan of scans)
    if (scan.groups.length === 1) alone.push((scan.groups[0] as Scan['groups'][number]).group);
  return { scans: scans.filter((scan) => scan.groups.length > 1), alone };
}
