import type { Batch, Claim, Json, Store } from '../../store/index.js';
import type { RunProgress } from '../sources/index.js';

/** A run's progress as the runtime uses it: the source's port, and the claims only it makes. */
export interface RunnerProgress extends RunProgress {
  /** Makes the progress row at the source's first cursor (a row from an earlier run keeps its own). */
  ensure(firstCursor: Json | null): Promise<void>;
  /** Claims the next range in the store, moving the cursor to the claim's. */
  claim(slot: number, claim: Claim): Promise<Batch>;
}

/**
 * A pipe's progress as its running source sees it (sources/contract.ts, RunProgress): the few
 * reads and writes a source's own protocol needs, on the runtime's store, for this pipe only.
 *
 * The cursor is kept here once read: only the run moves it (its claims and its source's resets;
 * nothing else writes it, store/progress-repo.ts), so an idle pipe's poll asks the store nothing
 * (1,000 idle pipes poll 33 times a second, bench/idle-pipes.ts). A pipe deleted under its run is
 * found by the node's sweep (gone-pipes.ts), not at each poll.
 */
export function runProgressOf(store: Store, pipeId: string): RunnerProgress {
  const progress = store.repos.progress;
  let cursor: { value: Json | null } | undefined;
  // What this run wrote last of files_pending, which nothing else writes (progress-repo.ts): an idle
  // pipe's every poll finds the same count. Each run writes it once before trusting this, so a
  // count another run left is put right.
  let pendingWritten: number | undefined;
  return {
    ensure: async (firstCursor) => {
      const row = await progress.ensure(pipeId, firstCursor);
      cursor = { value: row.cursor ?? null };
    },
    cursor: async () => {
      cursor ??= { value: (await progress.get(pipeId))?.cursor ?? null };
      return cursor.value;
    },
    claim: async (slot, claim) => {
      const after = cursor && { cursor: cursor.value };
      const batch = await store.transaction((repos) => repos.progress.claim(pipeId, slot, claim, after));
      cursor = { value: claim.cursor };
      return batch;
    },
    openBatches: () => progress.openBatches(pipeId),
    reset: async (to, forget) => {
      await store.transaction((repos) => repos.progress.reset(pipeId, to, forget));
      cursor = { value: to };
    },
    setFilesPending: async (count) => {
      if (count === pendingWritten) return;
      await progress.setFilesPending(pipeId, count);
      pendingWritten = count;
    },
    report: (problem) =>
      problem === null
        ? progress.recordError(pipeId, null)
        : progress.recordError(pipeId, problem.message, problem.code),
  };
}
