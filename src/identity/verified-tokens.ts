import { credentialDigest } from '../crypto/index.js';
import type { TokenPrincipal } from './principal.js';

/** How long a verified access token is trusted without reading the store again. */
const TOKEN_CACHE_MS = 60_000;

/**
 * Access tokens found valid lately, by a SHA-256 of the token (never the token itself). The store
 * looks tokens up by their HMAC (crypto/hashing.ts, tokenDigest); a request of a token seen within
 * the minute takes the one-shot hash instead, about a third of the HMAC's cost (bench/api.ts). A
 * revocation forgets them all, and a check that began before it remembers nothing, so a revoked
 * token is refused from the next request on.
 */
export class VerifiedTokens {
  private readonly tokens = new Map<string, { principal: TokenPrincipal; until: number }>();
  private revocations = 0;

  lookup(token: string): TokenPrincipal | undefined {
    const cached = this.tokens.get(keyOf(token));
    return cached && cached.until > Date.now() ? cached.principal : undefined;
  }

  /** Taken before a token is read from the store, and given back to `remember`. */
  generation(): number {
    return this.revocations;
  }

  remember(token: string, principal: TokenPrincipal, generation: number): void {
    if (generation !== this.revocations) return;
    this.tokens.set(keyOf(token), { principal, until: Date.now() + TOKEN_CACHE_MS });
  }

  forgetAll(): void {
    this.revocations += 1;
    this.tokens.clear();
  }
}

function keyOf(token: string): string {
  return credentialDigest(token).toString('base64');
}
