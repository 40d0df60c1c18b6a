import type { Store } from '../../store/index.js';
import type { RunProgress } from '../sources/index.js';

/**
 * A pipe's progress as its running source sees it (sources/contract.ts, RunProgress): the few
 * reads and writes a source's own protocol needs, on the runtime's store, for this pipe only.
 */
export function runProgressOf(store: Store, pipeId: string): RunProgress {
  const progress = store.repos.progress;
  // What this run wrote last of files_pending, which nothing else writes (progress-repo.ts): an idle
  // pipe's every poll finds the same count, and 1,000 idle pipes would write it 33 times a second
  // (bench/idle-pipes.ts). Each run writes it once before trusting this, so a count another run left
  // is put right.
  let pendingWritten: number | undefined;
  return {
    cursor: async () => (await progress.get(pipeId))?.cursor ?? null,
    openBatches: () => progress.openBatches(pipeId),
    reset: (cursor, forget) => store.transaction((repos) => repos.progress.reset(pipeId, cursor, forget)),
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
