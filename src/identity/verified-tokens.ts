import type { TokenPrincipal } from './principal.js';

/** How long a verified access token is trusted without reading the store again. */
const TOKEN_CACHE_MS = 60_000;

/**
 * Access tokens found valid lately, by digest (never the token itself). A revocation forgets them
 * all, and a check that began before it remembers nothing, so a revoked token is refused from the
 * next request on.
 */
export class VerifiedTokens {
  private readonly tokens = new Map<string, { principal: TokenPrincipal; until: number }>();
  private revocations = 0;

  lookup(digest: string): TokenPrincipal | undefined {
    const cached = this.tokens.get(digest);
    return cached && cached.until > Date.now() ? cached.principal : undefined;
  }

  /** Taken before a token is read from the store, and given back to `remember`. */
  generation(): number {
    return this.revocations;
  }

  remember(digest: string, principal: TokenPrincipal, generation: number): void {
    if (generation !== this.revocations) return;
    this.tokens.set(digest, { principal, until: Date.now() + TOKEN_CACHE_MS });
  }

  forgetAll(): void {
    this.revocations += 1;
    this.tokens.clear();
  }
}
