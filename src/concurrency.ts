/**
 * Runs `work` on every item, `limit` at a time. On the first failure it hands out no more work and
 * waits for what is running before it throws: a read still running after the batch is retried would
 * land in the emptied stage and be moved twice.
 */
export async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const lanes = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (next < items.length && !failure) {
      const index = next++;
      try {
        results[index] = await work(items[index] as T, index);
      } catch (error) {
        failure ??= { error };
      }
    }
  });
  await Promise.all(lanes);
  if (failure) throw failure.error;
  return results;
}

/** Waits `ms`, or less when the signal aborts (a stop must not wait out a polling interval). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Promise.all that waits for every promise before it throws the first failure: once a caller sees
 * the error, none of the work still runs (a stage still being made after its run ended).
 */
export async function allDone<T extends readonly unknown[]>(
  promises: {
    readonly [K in keyof T]: Promise<T[K]>;
  },
): Promise<T> {
  const settled = await Promise.allSettled(promises as readonly Promise<unknown>[]);
  for (const result of settled) if (result.status === 'rejected') throw result.reason;
  return settled.map((result) => (result as PromiseFulfilledResult<unknown>).value) as unknown as T;
}

/**
 * Runs `work` every `everyMs`, one run at a time (ticks that come while one runs are skipped), on
 * a timer that does not hold the process open. `work` handles its own failures (logs them): a
 * rejection here would be unhandled.
 */
export class Periodic {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly everyMs: number,
    private readonly work: () => Promise<void>,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => {
      this.running ??= this.work().finally(() => (this.running = undefined));
    }, this.everyMs);
    this.timer.unref();
  }

  /** No run starts from now on; waits for the one under way. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
