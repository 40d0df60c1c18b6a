import { availableParallelism } from 'node:os';

/**
 * vitest's globalSetup (vitest.config.ts): when a run ends, one line says how long it took and on
 * what, so that `npm test` states the duration of the whole suite (README, "Quickstart").
 */
export default function measureRun(): () => void {
  const started = Date.now();
  return () => {
    const seconds = Math.round((Date.now() - started) / 1000);
    const minutes = (seconds / 60).toFixed(1);
    console.log(
      `The tests took ${minutes} min (${seconds} s) on ${availableParallelism()} cores, Node ${process.version}`,
    );
  };
}
