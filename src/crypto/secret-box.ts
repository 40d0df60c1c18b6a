import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { CodedError } from '../errors.js';

const VERSION = 'v1';

/**
 * Encrypts secrets at rest with AES-256-GCM under the master key (docs/architecture.md, "Secrets"). The text
 * form `v1:<iv>:<tag>:<ciphertext>` (base64 parts) keeps a version so the scheme can change later.
 * The associated data binds a ciphertext to the row it belongs to, so it cannot be moved elsewhere.
 */
export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the master key must be 32 bytes');
  }

  seal(plaintext: string, associatedData: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(associatedData));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [
      VERSION,
      iv.toString('base64'),
      cipher.getAuthTag().toString('base64'),
      body.toString('base64'),
    ].join(':');
  }

  open(sealed: string, associatedData: string): string {
    const [version, iv, tag, body] = sealed.split(':');
    if (version !== VERSION || iv === undefined || tag === undefined || body === undefined) {
      throw new CodedError('SLUICE_ERR_SECRET_UNREADABLE', 'unrecognised sealed secret');
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
      decipher.setAAD(Buffer.from(associatedData));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
    } catch (error) {
      // GCM's check failed: the ciphertext was changed, belongs to another row, or another key sealed it.
      throw new CodedError(
        'SLUICE_ERR_SECRET_UNREADABLE',
        `a sealed secret does not open with the master key in use (${(error as Error).message})`,
        { cause: error },
      );
    }
  }

  sealJson(value: unknown, associatedData: string): string {
    return this.seal(JSON.stringify(value), associatedData);
  }

  openJson<T>(sealed: string, associatedData: string): T {
    return JSON.parse(this.open(sealed, associatedData)) as T;
  }
}
