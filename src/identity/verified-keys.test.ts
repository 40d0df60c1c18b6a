import { describe, expect, it } from 'vitest';
import type { KeyPrincipal } from './principal.js';
import { VerifiedKeys } from './verified-keys.js';

const principal = { keyId: 'sk_a', organizationId: 'org', role: 'admin', operator: false } as KeyPrincipal;

describe('keys verified lately', () => {
  it('answers a remembered key with its secret only', () => {
    const keys = new VerifiedKeys();
    keys.remember('sk_a', 'secret', principal, keys.generation());
    expect(keys.lookup('sk_a', 'secret')).toBe(principal);
    expect(keys.lookup('sk_a', 'secreT')).toBeUndefined();
    expect(keys.lookup('sk_b', 'secret')).toBeUndefined();
  });

  it('forgets a revoked key at once, and a check that began before the revocation remembers nothing', () => {
    const keys = new VerifiedKeys();
    keys.remember('sk_a', 'secret', principal, keys.generation());
    const began = keys.generation();
    keys.forget('sk_a');
    expect(keys.lookup('sk_a', 'secret')).toBeUndefined();
    // The check read the key (not revoked yet) and ran scrypt while the revocation landed.
    keys.remember('sk_a', 'secret', principal, began);
    expect(keys.lookup('sk_a', 'secret')).toBeUndefined();
  });
});
