import { useEffect, useState } from 'preact/hooks';

/**
 * Routes live in the address's hash (`#/s/<service>/pipes/<pipe>`): every page has an address a
 * user can reload, bookmark or share, and the server serves one document for all of them.
 */
export function useRoute(): string[] {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    addEventListener('hashchange', changed);
    // A change between the first render and this listener would be missed otherwise.
    changed();
    return () => removeEventListener('hashchange', changed);
  }, []);
  return routeOf(hash);
}

/** The parts of an address's hash: `#/s/<service>/pipes` reads ['s', '<service>', 'pipes']. */
export function routeOf(hash: string): string[] {
  return hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
}

export function href(...parts: string[]): string {
  return `#/${parts.map(encodeURIComponent).join('/')}`;
}

export function navigate(...parts: string[]): void {
  location.hash = href(...parts);
}
