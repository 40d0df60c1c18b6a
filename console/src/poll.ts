import { useEffect, useRef, useState } from 'preact/hooks';

export interface Polled<T> {
  value: T | undefined;
  error: Error | undefined;
  /** Reads again now (after an action), without waiting for the next tick. */
  refresh: () => void;
}

/**
 * Reads `load` now and every `everyMs` while the page shows it and the tab is visible; a read
 * never overlaps the previous one, so a slow server is not asked twice at once.
 */
export function usePolled<T>(load: () => Promise<T>, everyMs: number, deps: unknown[]): Polled<T> {
  const [value, setValue] = useState<T | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      if (document.visibilityState !== 'hidden') {
        try {
          const next = await loadRef.current();
          if (stopped) return;
          setValue(next);
          setError(undefined);
        } catch (failure) {
          if (stopped) return;
          setError(failure as Error);
        }
      }
      if (!stopped && everyMs > 0) timer = setTimeout(run, everyMs);
    };
    void run();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, [...deps, tick, everyMs]);
  return { value, error, refresh: () => setTick((n) => n + 1) };
}
