const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };
export const MAX_BACKFILL_WINDOWS = 50;
export const MAX_BACKFILL_MS = 24 * 3_600_000;

export function intervalMs(interval: string): number {
  const match = /^(\d+)([mhd])$/.exec(interval);
  if (!match) throw new Error(`not an interval: ${interval}`);
  return Number(match[1]) * (UNIT_MS[match[2] as string] as number);
}

export interface Window {
  start: Date;
  end: Date;
}

/**
 * The completed windows `[start, start + interval)` to evaluate now (README, "Alerts area"): aligned
 * to the interval since the epoch, after the last one evaluated, at most 50 and at most 24 hours
 * back. A new alert starts with the last completed window.
 */
export function windowsToEvaluate(now: Date, interval: string, evaluatedUntil: Date | null): Window[] {
  const size = intervalMs(interval);
  const lastEnd = Math.floor(now.getTime() / size) * size;
  const oldest = Math.max(
    lastEnd - MAX_BACKFILL_WINDOWS * size,
    // Windows that ended within the last 24 hours.
    Math.floor((now.getTime() - MAX_BACKFILL_MS) / size) * size,
  );
  const from = Math.max(evaluatedUntil ? evaluatedUntil.getTime() : lastEnd - size, oldest);
  const windows: Window[] = [];
  for (let start = from; start + size <= lastEnd; start += size) {
    windows.push({ start: new Date(start), end: new Date(start + size) });
  }
  return windows;
}
