import { randomBytes } from 'node:crypto';

/** Ids of the alerts area: 24 hexadecimal characters, the form of the original platform's ids. */
export function newId(): string {
  return randomBytes(12).toString('hex');
}

export function isId(value: string): boolean {
  return /^[0-9a-f]{24}$/.test(value);
}

/**
 * What the original platform's routes take as an id (its ObjectId check): 24 hexadecimal
 * characters, or any 12 bytes. Anything else is a malformed id (a 400); these may still name nothing.
 */
export function isObjectId(value: string): boolean {
  return /^[0-9a-fA-F]{24}$/.test(value) || (value.length === 12 && Buffer.byteLength(value) === 12);
}
