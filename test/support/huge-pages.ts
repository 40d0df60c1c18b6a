import { existsSync, readFileSync } from 'node:fs';

const MODE_FILE = '/sys/kernel/mm/transparent_hugepage/enabled';

/**
 * The kernel's transparent huge page mode: `madvise` hands them out only where a process asks,
 * which is what a test can watch; with `always` every process gets them and with `never` none
 * does; undefined on a kernel without them.
 */
export function hugePageMode(): string | undefined {
  if (!existsSync(MODE_FILE)) return undefined;
  return /\[(\w+)\]/.exec(readFileSync(MODE_FILE, 'utf8'))?.[1];
}

/** A process's anonymous memory on huge pages (AnonHugePages of its smaps_rollup), MB. */
export function hugePagesMbOf(pid: number): number {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  return Number(/AnonHugePages:\s+(\d+) kB/.exec(rollup)?.[1]) / 1024;
}

/** A process's environment, one `NAME=value` an entry. */
export function environmentOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
}
