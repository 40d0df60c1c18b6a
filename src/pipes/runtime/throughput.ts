/** How far back a running pipe's rates look. */
const WINDOW_MS = 60_000;

/**
 * Rows and source bytes a running pipe committed over the last minute, per second: what its
 * status shows as rowsPerSecond and bytesPerSecond. Kept in memory for the run only; the store's
 * totals (and the metrics' counters, for rate()) are the lasting record.
 */
export class Throughput {
  private readonly commits: { at: number; rows: number; bytes: number }[] = [];
  private readonly started: number;

  constructor(private readonly now: () => number = Date.now) {
    this.started = now();
  }

  add(rows: number, bytes: number): void {
    this.commits.push({ at: this.now(), rows, bytes });
    this.forget();
  }

  /**
   * Per second over the last minute, or since the run started when that is shorter, to two
   * decimals: a few rows a minute read as 0.05, not as 0 beside a bytes rate that is not.
   */
  rates(): { rowsPerSecond: number; bytesPerSecond: number } {
    this.forget();
    const seconds = Math.max(1, Math.min(WINDOW_MS, this.now() - this.started)) / 1000;
    const sum = (pick: (c: { rows: number; bytes: number }) => number) =>
      this.commits.reduce((total, commit) => total + pick(commit), 0);
    const perSecond = (total: number) => Math.round((total / seconds) * 100) / 100;
    return { rowsPerSecond: perSecond(sum((c) => c.rows)), bytesPerSecond: perSecond(sum((c) => c.bytes)) };
  }

  /** Nothing committed over the last minute, the run a minute old or more. */
  quiet(): boolean {
    this.forget();
    return this.commits.length === 0 && this.now() - this.started >= WINDOW_MS;
  }

  private forget(): void {
    const since = this.now() - WINDOW_MS;
    while ((this.commits[0]?.at ?? since) < since) this.commits.shift();
  }
}
