import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config.js';
import { codeOf } from '../errors.js';
import { hashSecret, MASTER_KEY_FILE, readMasterKey, SecretBox, tokenDigest, verifySecret } from './index.js';

/** What `run` threw (it must throw). */
function thrownBy(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('it did not throw');
}

describe('SecretBox', () => {
  const box = new SecretBox(randomBytes(32));

  it('round-trips and never shows the plaintext', () => {
    const sealed = box.sealJson({ password: 'hunter2' }, 'pipe:1');
    expect(sealed).not.toContain('hunter2');
    expect(box.openJson(sealed, 'pipe:1')).toEqual({ password: 'hunter2' });
  });

  it('refuses a ciphertext moved to another row, a tampered one, or another key', () => {
    const sealed = box.seal('secret', 'pipe:1');
    const parts = sealed.split(':');
    parts[3] = Buffer.from('tampered').toString('base64');
    for (const open of [
      () => box.open(sealed, 'pipe:2'),
      () => box.open(parts.join(':'), 'pipe:1'),
      () => new SecretBox(randomBytes(32)).open(sealed, 'pipe:1'),
      () => box.open('not sealed', 'pipe:1'),
    ]) {
      expect(codeOf(thrownBy(open))).toBe('SLUICE_ERR_SECRET_UNREADABLE');
    }
  });
});

describe('the master key', () => {
  it('a malformed SLUICE_MASTER_KEY, or a key file holding no key, is SLUICE_ERR_CONFIG', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-master-key-'));
    try {
      const configured = await readMasterKey(dir, 'not-a-key').catch((error: unknown) => error);
      expect(configured).toBeInstanceOf(ConfigError);
      expect(codeOf(configured)).toBe('SLUICE_ERR_CONFIG');
      expect((configured as Error).message).toContain('SLUICE_MASTER_KEY (--master-key) must be 32 bytes');
      await writeFile(join(dir, MASTER_KEY_FILE), 'short\n');
      expect(codeOf(await readMasterKey(dir, undefined).catch((error: unknown) => error))).toBe(
        'SLUICE_ERR_CONFIG',
      );
      expect(await readMasterKey(dir, 'ab'.repeat(32))).toEqual(Buffer.from('ab'.repeat(32), 'hex'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
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
