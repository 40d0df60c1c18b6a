import type { Repos } from './index.js';

/** The longest a write waits for others to join its group. */
const MAX_WAIT_MS = 2;

interface Member<Item> {
  item: Item;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: items asked for at about the same time (flushWhenSettled) or while a commit is in
 * flight are written together by one call of `write` in one transaction. N concurrent writers pay
 * one BEGIN, COMMIT and set of statements instead of N: embedded PGlite runs one transaction at a time, and each
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
      this.flushWhenSettled();
    });
  }

  /**
   * Flushes once a turn of the event loop has added nothing to the queue (or it holds a full
   * group, or its first item has waited MAX_WAIT_MS). Not at once: PGlite runs a transaction
   * without yielding to I/O, so requests read in the same turn would each commit alone. And not
   * after one turn: concurrent clients fall into two halves, one turn reading the requests of one
   * while the other's answers go out (bench/api.ts: groups of 5 at 10 connections), and a turn
   * more gathers both.
   */
  private flushWhenSettled(): void {
    const since = performance.now();
    let seen = 0;
    const check = () => {
      const grew = this.queue.length > seen;
      seen = this.queue.length;
      const waiting = grew && seen < this.maxGroup && performance.now() - since < MAX_WAIT_MS;
      if (waiting) setImmediate(check);
      else void this.flush();
    };
    setImmediate(check);
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
