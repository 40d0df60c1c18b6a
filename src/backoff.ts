/**
 * How the wait before a retry is made smaller at random: `equal` takes it anywhere in [d/2, d],
 * `full` anywhere in [0, d], `none` keeps it. Jitter only ever shortens a wait, so no retry comes
 * later than the doubling says, and retries that failed together (pipes of one source, nodes of
 * one store, shards of one stream) do not all come back at the same instant.
 */
export type Jitter = 'none' | 'equal' | 'full';

export interface BackoffPolicy {
  /** The wait before the first retry, before jitter. */
  baseMs: number;
  /** No wait is longer than this. */
  maxMs: number;
  /** Default `equal`. */
  jitter?: Jitter;
  /** A number in [0, 1); tests pass their own to see exact waits. */
  random?: () => number;
}

/**
 * The wait before retry `attempt` (1 for the first): `baseMs` doubled for each retry before it, at
 * most `maxMs`, then jittered.
 */
export function backoffDelay(policy: BackoffPolicy & { attempt: number }): number {
  const doublings = Math.min(Math.max(0, Math.floor(policy.attempt) - 1), 52);
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** doublings);
  const random = policy.random ?? Math.random;
  switch (policy.jitter ?? 'equal') {
    case 'none':
      return ceiling;
    case 'full':
      return Math.floor(random() * ceiling);
    case 'equal':
      return Math.floor(ceiling / 2 + random() * (ceiling / 2));
  }
}

/** The waits of one run of retries: each `next()` is the following one; `reset()` starts over. */
export class BackoffDelays {
  private attempt = 0;

  constructor(private readonly policy: BackoffPolicy) {}

  next(): number {
    this.attempt += 1;
    return backoffDelay({ ...this.policy, attempt: this.attempt });
  }

  reset(): void {
    this.attempt = 0;
  }
}
