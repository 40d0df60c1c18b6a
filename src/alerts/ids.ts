import { randomBytes } from 'node:crypto';

/** Ids of the alerts area: 24 hexadecimal characters, the form of the original platform's ids. */
export function newId(): string {
  return randomBytes(12).toString('hex');
}

export function isId(value: string): boolean {
  return /^[0-9a-f]{24}$/.test(value);
}
