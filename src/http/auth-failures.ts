import { SluiceError } from '../errors.js';

/** Too many failed authentications from one client address: refused before any hash is computed. */
export class TooManyFailuresError extends SluiceError {
  constructor(readonly retryAfterSeconds: number) {
    super(
      'SLUICE_ERR_AUTH_FAILURES',
      429,
      `too many failed authentications from this address; retry after ${retryAfterSeconds} s`,
      { label: 'SLUICE_ERR_AUTH_FAILURES' },
    );
  }
}

/**
 * Failed authentications counted per client address over a sliding minute (SLUICE_AUTH_FAILURES;
 * 0 turns it off). An address over the limit is answered 429 before its secret is hashed (each
 * wrong secret costs a scrypt), whatever key id or token it claims, so new ids per request do not
 * help; nobody else's address is affected, so knowing a key id does not lock its owner out.
 */
export class AuthFailureLimiter {
  private readonly failures = new Map<string, number[]>();
  private static readonly WINDOW_MS = 60_000;
  /** Addresses remembered at most; the oldest are forgotten first (a flood of addresses). */
  private static readonly MAX_ADDRESSES = 100_000;

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Throws TooManyFailuresError when `address` may not try now. */
  admit(address: string): void {
    if (this.perMinute <= 0) return;
    const recent = this.recent(address);
    if (recent.length < this.perMinute) return;
    const oldest = recent[0] ?? this.now();
    throw new TooManyFailuresError(
      Math.max(1, Math.ceil((oldest + AuthFailureLimiter.WINDOW_MS - this.now()) / 1000)),
    );
  }

  /** Counts one failed authentication from `address`. */
  failed(address: string): void {
    if (this.perMinute <= 0) return;
    const recent = this.recent(address);
    recent.push(this.now());
    // Re-inserted last, so the map's first entries are the addresses heard from longest ago.
    this.failures.delete(address);
    this.failures.set(address, recent.slice(-this.perMinute));
    if (this.failures.size > AuthFailureLimiter.MAX_ADDRESSES) {
      const first = this.failures.keys().next().value;
      if (first !== undefined) this.failures.delete(first);
    }
  }

  private recent(address: string): number[] {
    const since = this.now() - AuthFailureLimiter.WINDOW_MS;
    return (this.failures.get(address) ?? []).filter((at) => at > since);
  }
}
