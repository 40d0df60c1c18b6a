import { timingSafeEqual } from 'node:crypto';
import { credentialDigest } from '../crypto/index.js';
import type { KeyPrincipal } from './principal.js';

/** How long a verified key secret is trusted without running scrypt again. */
const KEY_CACHE_MS = 60_000;

/**
 * API keys whose secret scrypt verified lately, by key id, holding a SHA-256 of the secret (never
 * the secret itself). Checking a request against it is synchronous, so the common case of a key
 * seen within the minute costs no promise and no store read. A revoked key is forgotten at once by
 * the revocation (IdentityService.revokeKey), so it is refused from the next request on.
 */
export class VerifiedKeys {
  private readonly keys = new Map<string, { digest: Buffer; principal: KeyPrincipal; until: number }>();
  /** Counts revocations: a check that began before one may not remember what it read. */
  private revocations = 0;

  /** Taken before a key is read from the store, and given back to `remember`. */
  generation(): number {
    return this.revocations;
  }

  /** The principal of a key verified within the minute whose secret matches; else undefined. */
  lookup(keyId: string, secret: string): KeyPrincipal | undefined {
    const cached = this.keys.get(keyId);
    if (!cached || cached.until <= Date.now()) return undefined;
    // The one-shot hash: createHash's object per request cost about twice as much (bench/api.ts).
    // Both digests are 32 bytes, so the comparison takes the same time whatever the secret.
    return timingSafeEqual(cached.digest, credentialDigest(secret)) ? cached.principal : undefined;
  }

  /**
   * Trusts the key for KEY_CACHE_MS, unless a key was revoked since `generation` was taken: a
   * revocation landing while scrypt ran would otherwise be outlived by the cache for a minute.
   */
  remember(keyId: string, secret: string, principal: KeyPrincipal, generation: number): void {
    if (generation !== this.revocations) return;
    this.keys.set(keyId, { digest: credentialDigest(secret), principal, until: Date.now() + KEY_CACHE_MS });
  }

  forget(keyId: string): void {
    this.revocations += 1;
    this.keys.delete(keyId);
  }
}
