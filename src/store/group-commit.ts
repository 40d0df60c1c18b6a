import type { Repos } from './index.js';

type Work = (repos: Repos) => Promise<unknown>;

interface Member {
  work: Work;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: writes that arrive while a commit is in flight wait for it and then share the next
 * transaction, so N concurrent writers pay one BEGIN/COMMIT instead of N. Embedded PGlite runs one
 * transaction at a time, and a pipe create's own insert (one statement, PipesRepo.insert) costs
 * less than the transaction around it (bench/api.ts), so concurrent creates were queued behind each
 * other's commits.
 *
 * Each caller still gets its own outcome. A member's work runs inside the shared transaction; when
 * one fails, the whole transaction is rolled back (nothing of anyone's is written) and each member
 * then runs alone in a transaction of its own, so the failing one gets its own error and the others
 * commit. Work may therefore run twice: it must only write through the repos it is given and leave
 * everything else (caches, the runtime, logs) to its caller, after the promise resolves. A failed
 * COMMIT likewise falls back to one transaction each.
 */
export class GroupCommit {
  private queue: Member[] = [];
  private flushing = false;

  constructor(
    private readonly transaction: <T>(work: (repos: Repos) => Promise<T>) => Promise<T>,
    /** The most writes one transaction carries. */
    private readonly maxGroup = 64,
  ) {}

  run<T>(work: (repos: Repos) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
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
  private async together(group: Member[]): Promise<boolean> {
    let results: unknown[];
    try {
      results = await this.transaction(async (repos) => {
        const values: unknown[] = [];
        for (const member of group) values.push(await member.work(repos));
        return values;
      });
    } catch {
      // Not swallowed: every member runs again alone (alone()), and a member whose work fails
      // gets that error as its own.
      return false;
    }
    for (const [index, member] of group.entries()) member.resolve(results[index]);
    return true;
  }

  private async alone(group: Member[]): Promise<void> {
    for (const member of group) {
      try {
        member.resolve(await this.transaction(member.work));
      } catch (error) {
        member.reject(error);
      }
    }
  }
}
