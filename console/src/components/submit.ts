import { useState } from 'preact/hooks';
import type { ApiError } from '../api.js';

/**
 * What every form of the console does with its submit: the call runs once at a time (`busy`), and
 * the server's refusal is kept (`error`) for the fields it names to show (components/field.tsx).
 */
export function useSubmit(action: () => Promise<unknown>) {
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event?: Event) => {
    event?.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await action();
    } catch (failure) {
      setError(failure as ApiError);
    } finally {
      setBusy(false);
    }
  };
  return { submit, busy, error, setError };
}
