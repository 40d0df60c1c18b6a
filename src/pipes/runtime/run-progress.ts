import type { Store } from '../../store/index.js';
import type { RunProgress } from '../sources/index.js';

/**
 * A pipe's progress as its running source sees it (sources/contract.ts, RunProgress): the few
 * reads and writes a source's own protocol needs, on the runtime's store, for this pipe only.
 */
export function runProgressOf(store: Store, pipeId: string): RunProgress {
  const progress = store.repos.progress;
  return {
    cursor: async () => (await progress.get(pipeId))?.cursor ?? null,
    openBatches: () => progress.openBatches(pipeId),
    reset: (cursor, forget) => store.transaction((repos) => repos.progress.reset(pipeId, cursor, forget)),
    setFilesPending: (count) => progress.setFilesPending(pipeId, count),
    report: (problem) =>
      problem === null
        ? progress.recordError(pipeId, null)
        : progress.recordError(pipeId, problem.message, problem.code),
  };
}
