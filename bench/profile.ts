import { mkdir, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

/**
 * Runs `work` under V8's sampling profiler when BENCH_PROFILE names a folder, writes the profile
 * there (`<label>.cpuprofile`, for Chrome's DevTools) and prints the functions with the most self
 * time: where this process's CPU went, which is what a bench's note has to explain.
 */
export async function profiled<T>(label: string, work: () => Promise<T>): Promise<T> {
  const folder = process.env.BENCH_PROFILE;
  if (!folder) return work();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  try {
    return await work();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    const file = join(folder, `${label}.cpuprofile`);
    await mkdir(folder, { recursive: true });
    await writeFile(file, JSON.stringify(profile));
    printTopFunctions(label, profile.nodes as ProfileNode[], file);
  }
}

function printTopFunctions(label: string, nodes: ProfileNode[], file: string, top = 15): void {
  const byFunction = new Map<string, number>();
  const byPlace = new Map<string, number>();
  let total = 0;
  for (const node of nodes) {
    const hits = node.hitCount ?? 0;
    total += hits;
    const { functionName, url } = node.callFrame;
    const where = placeOf(url);
    const key = `${functionName || '(anonymous)'} ${where}`.trim();
    byFunction.set(key, (byFunction.get(key) ?? 0) + hits);
    byPlace.set(where || functionName, (byPlace.get(where || functionName) ?? 0) + hits);
  }
  const share = (hits: number) => ((hits / Math.max(total, 1)) * 100).toFixed(1);
  const topOf = (map: Map<string, number>, column: string) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, hits]) => ({ 'self %': share(hits), [column]: name }));
  console.log(`\nwhere this process's CPU went in "${label}" (self time; whole profile: ${file})`);
  console.table(topOf(byPlace, 'file or package'));
  console.table(topOf(byFunction, 'function'));
}

/** A file of the repository by its path, a dependency by its package, WebAssembly as one. */
function placeOf(url: string): string {
  if (!url) return '';
  if (url.startsWith('wasm://')) return 'WebAssembly (PGlite)';
  const dependency = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dependency) return dependency[1] as string;
  const own = /\/((?:src|bench|test)\/.*)$/.exec(url);
  return own ? (own[1] as string) : url.replace(/^file:\/\//, '');
}
