/**
 * A read-through cache for a store that only this process writes: embedded PGlite, which the data
 * directory lock gives to one process. (With PostgreSQL several nodes write, so no cache is used.)
 *
 * A read that raced a write must not put the older value back: every write bumps the key's
 * generation, and a read stores its result only if the generation it started with still holds.
 */
export class WriteThroughCache<V> {
  private readonly values = new Map<string, V>();
  private readonly generations = new Map<string, number>();

  constructor(private readonly maxEntries = 10_000) {}

  async read(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const hit = this.values.get(key);
    if (hit !== undefined) return hit;
    const generation = this.generations.get(key) ?? 0;
    const loaded = await load();
    if (loaded !== undefined && (this.generations.get(key) ?? 0) === generation) this.remember(key, loaded);
    return loaded;
  }

  /** After a committed write: the new value, or undefined when the object is gone. */
  written(key: string, value: V | undefined): void {
    this.generations.set(key, (this.generations.get(key) ?? 0) + 1);
    if (value === undefined) this.values.delete(key);
    else this.remember(key, value);
  }

  /** Before a write that may not commit: forget the value so no reader trusts it meanwhile. */
  invalidate(key: string): void {
    this.generations.set(key, (this.generations.get(key) ?? 0) + 1);
    this.values.delete(key);
  }

  private remember(key: string, value: V): void {
    if (this.values.size >= this.maxEntries && !this.values.has(key)) {
      const oldest = this.values.keys().next().value;
      if (oldest !== undefined) this.values.delete(oldest);
    }
    this.values.set(key, value);
  }
}

/**
 * `build` made once per row object. A row the cache holds is never changed (a write stores a new
 * row), so what is built of it, such as the record a GET answers with, can be shared while it is
 * held; rows read from the store are new objects, and entries go with their rows. Never change
 * what `build` returns.
 */
export function perRow<R extends object, V>(build: (row: R) => V): (row: R) => V {
  const built = new WeakMap<R, V>();
  return (row) => {
    let value = built.get(row);
    if (value === undefined) {
      value = build(row);
      built.set(row, value);
    }
    return value;
  };
}
