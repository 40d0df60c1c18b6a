import type { Repos } from './index.js';

interface Member<Item> {
  item: Item;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: items that arrive while a commit is in flight wait for it, then are written
 * together by one call of `write` in the next transaction. N concurrent writers pay one BEGIN,
 * COMMIT and statement instead of N: embedded PGlite runs one transaction at a time, and each
 * statement costs it more than the rows in it (bench/api.ts, pipe creates).
 *
 * Each caller still gets its own outcome. When the group's write or its COMMIT fails, nothing of
 * anyone's is written (the transaction rolls back) and each item is then written alone in a
 * transaction of its own, so the failing one gets its own error and the others commit. `write` may
 * therefore see an item twice: it must only write through the repos it is given and leave
 * everything else (caches, the runtime, logs) to the caller, after the promise resolves.
 */
export class GroupCommit<Item> {
  private queue: Member<Item>[] = [];
  private flushing = false;

  constructor(
    private readonly transaction: <T>(work: (repos: Repos) => Promise<T>) => Promise<T>,
    /** Writes the items in the transaction's repos. */
    private readonly write: (repos: Repos, items: Item[]) => Promise<void>,
    /** The most items one transaction carries. */
    private readonly maxGroup = 64,
  ) {}

  run(item: Item): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.flushing) return;
      this.flushing = true;
      // Not at once: PGlite runs a transaction without yielding to I/O, so the requests read in
      // the same turn of the event loop would each commit alone. After the turn's I/O callbacks
      // (setImmediate), they are all in the queue.
      setImmediate(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const group = this.queue.splice(0, this.maxGroup);
        if (group.length === 1 || !(await this.together(group))) await this.alone(group);
      }
    } finally {
      this.flushing = false;
    }
  }

  /** The group in one transaction; false (nothing written, nobody settled) when any of it failed. */
  private async together(group: Member<Item>[]): Promise<boolean> {
    try {
      const items = group.map((member) => member.item);
      await this.transaction((repos) => this.write(repos, items));
    } catch {
      // Not swallowed: every item is written again alone (alone()), and one whose write fails
      // gets that error as its own.
      return false;
    }
    for (const member of group) member.resolve();
    return true;
  }

  private async alone(group: Member<Item>[]): Promise<void> {
    for (const member of group) {
      try {
        await this.transaction((repos) => this.write(repos, [member.item]));
        member.resolve();
      } catch (error) {
        member.reject(error);
      }
    }
  }
}
