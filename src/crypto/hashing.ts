import { createHmac, hash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scryptAsync = promisify(scrypt) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: { N: number; r: number; p: number; maxmem: number },
) => Promise<Buffer>;

// Cost parameters stored with each hash so they can be raised later without breaking old keys.
const COST = { N: 16384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

/**
 * An unkeyed SHA-256 of a credential as a request sent it, for what is kept in memory only: the
 * caches of keys and tokens verified lately, a rate limit's bucket. The one-shot hash costs about
 * half of a createHash object per request (bench/api.ts); nothing stored is made with it.
 */
export function credentialDigest(text: string): Buffer {
  return hash('sha256', text, 'buffer');
}

/** Hashes an API key secret with scrypt: `scrypt$N$r$p$salt$hash`. */
export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(secret, salt, 32, COST);
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64'), hash.toString('base64')].join('$');
}

export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || salt === undefined || hash === undefined) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scryptAsync(secret, Buffer.from(salt, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: COST.maxmem,
  });
  return timingSafeEqual(actual, expected);
}

/**
 * Bearer tokens are looked up by digest, so the digest must be deterministic: an HMAC under a key
 * derived from the master key, so a copy of the store alone cannot test guesses.
 */
export function tokenDigest(token: string, masterKey: Buffer): string {
  let key = TOKEN_KEYS.get(masterKey);
  if (!key) {
    key = createHmac('sha256', masterKey).update('sluice access tokens').digest();
    TOKEN_KEYS.set(masterKey, key);
  }
  return createHmac('sha256', key).update(token).digest('base64url');
}

/** The token key derived from each master key, computed once (every bearer request needs it). */
const TOKEN_KEYS = new WeakMap<Buffer, Buffer>();

/** A random URL-safe string with `bytes` bytes of entropy. */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
