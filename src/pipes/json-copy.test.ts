import { describe, expect, it } from 'vitest';
import { copyJson } from './json-copy.js';

describe('copyJson', () => {
  it('copies every level, so changing the copy leaves the original as it was', () => {
    const original = { a: { b: [1, { c: 'x' }], d: null }, e: true, f: 1.5 };
    const copy = copyJson(original);
    expect(copy).toEqual(original);
    (copy.a.b[1] as { c: string }).c = 'changed';
    copy.a.b.push(2);
    expect(original).toEqual({ a: { b: [1, { c: 'x' }], d: null }, e: true, f: 1.5 });
  });

  it('keeps a __proto__ key as a field of the copy, never its prototype', () => {
    const parsed = JSON.parse('{"outer":{"__proto__":{"polluted":true}}}') as { outer: object };
    const copy = copyJson(parsed);
    expect(Object.getPrototypeOf(copy.outer)).toBe(Object.prototype);
    expect((copy.outer as { polluted?: boolean }).polluted).toBeUndefined();
    expect(JSON.stringify(copy)).toBe('{"outer":{"__proto__":{"polluted":true}}}');
  });
});
