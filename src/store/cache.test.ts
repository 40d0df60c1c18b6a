import { describe, expect, it } from 'vitest';
import { WriteThroughCache } from './cache.js';

describe('WriteThroughCache', () => {
  it('loads once, then answers from memory', async () => {
    const cache = new WriteThroughCache<string>();
    let loads = 0;
    const load = async () => {
      loads += 1;
      return 'v1';
    };
    expect(await cache.read('k', load)).toBe('v1');
    expect(await cache.read('k', load)).toBe('v1');
    expect(loads).toBe(1);
  });

  it('does not keep a value read before a write that finished during the read', async () => {
    const cache = new WriteThroughCache<string>();
    let release!: (value: string) => void;
    const slowRead = cache.read('k', () => new Promise<string>((resolve) => (release = resolve)));
    cache.written('k', 'v2');
    release('v1 (stale)');
    expect(await slowRead).toBe('v1 (stale)');
    expect(await cache.read('k', async () => 'from store')).toBe('v2');
    cache.written('k', undefined);
    expect(await cache.read('k', async () => undefined)).toBeUndefined();
  });

  it('forgets an invalidated value and evicts the oldest entry past its size', async () => {
    const cache = new WriteThroughCache<number>(2);
    cache.written('a', 1);
    cache.written('b', 2);
    cache.written('c', 3);
    expect(await cache.read('a', async () => 10)).toBe(10);
    cache.invalidate('c');
    expect(await cache.read('c', async () => 30)).toBe(30);
  });
});
