import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hashSecret, SecretBox, tokenDigest, verifySecret } from './index.js';

describe('SecretBox', () => {
  const box = new SecretBox(randomBytes(32));

  it('round-trips and never shows the plaintext', () => {
    const sealed = box.sealJson({ password: 'hunter2' }, 'pipe:1');
    expect(sealed).not.toContain('hunter2');
    expect(box.openJson(sealed, 'pipe:1')).toEqual({ password: 'hunter2' });
  });

  it('refuses a ciphertext moved to another row, a tampered one, or another key', () => {
    const sealed = box.seal('secret', 'pipe:1');
    expect(() => box.open(sealed, 'pipe:2')).toThrow();
    const parts = sealed.split(':');
    parts[3] = Buffer.from('tampered').toString('base64');
    expect(() => box.open(parts.join(':'), 'pipe:1')).toThrow();
    expect(() => new SecretBox(randomBytes(32)).open(sealed, 'pipe:1')).toThrow();
  });
});

describe('key and token hashing', () => {
  it('verifies a scrypt hash and rejects a wrong secret', async () => {
    const hash = await hashSecret('right');
    expect(hash).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(await verifySecret('right', hash)).toBe(true);
    expect(await verifySecret('wrong', hash)).toBe(false);
  });

  it('digests tokens deterministically under the master key', () => {
    const key = randomBytes(32);
    expect(tokenDigest('t', key)).toBe(tokenDigest('t', key));
    expect(tokenDigest('t', key)).not.toBe(tokenDigest('t', randomBytes(32)));
  });
});
