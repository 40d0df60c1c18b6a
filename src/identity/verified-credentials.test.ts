import { describe, expect, it } from 'vitest';
import type { KeyPrincipal } from './principal.js';
import { VerifiedKeys } from './verified-keys.js';
import { VerifiedTokens } from './verified-tokens.js';

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

describe('tokens verified lately', () => {
  const token = { tokenId: 't', userId: 'u', userName: 'n', teamId: 'team', organizationId: 'org' };

  it('a revocation forgets every token, and a check that began before it remembers nothing', () => {
    const tokens = new VerifiedTokens();
    tokens.remember('slt_token-a', token, tokens.generation());
    expect(tokens.lookup('slt_token-a')).toBe(token);
    const began = tokens.generation();
    tokens.forgetAll();
    expect(tokens.lookup('slt_token-a')).toBeUndefined();
    tokens.remember('slt_token-a', token, began);
    expect(tokens.lookup('slt_token-a')).toBeUndefined();
  });

  it('finds a token only by the token itself', () => {
    const tokens = new VerifiedTokens();
    tokens.remember('slt_token-a', token, tokens.generation());
    expect(tokens.lookup('slt_token-b')).toBeUndefined();
    expect(tokens.lookup('slt_token-a ')).toBeUndefined();
    expect(tokens.lookup('slt_token-a')).toBe(token);
  });
});
