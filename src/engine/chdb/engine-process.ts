import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { EngineClose } from './protocol.js';

/** What an engine process is given and how it ends: its environment, its children, its files. */

/** Removes the files of `dir` whose names `matches` says (none when the directory is missing). */
export async function removeFiles(dir: string, matches: (name: string) => boolean): Promise<void> {
  const names = await readdir(dir).catch(() => [] as string[]);
  await Promise.all(names.filter(matches).map((name) => rm(join(dir, name), { force: true })));
}

/**
 * Ends an engine process the way its owner closes it: told first, so it closes its sessions rather
 * than take the disconnect for its owner's death; killed if it has not ended 10 s later.
 */
export async function endProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.send({ close: true } satisfies EngineClose, () => {
      if (child.connected) child.disconnect();
    });
    setTimeout(() => {
      child.kill('SIGKILL');
      // A process that was already gone has no 'exit' left to give.
      setTimeout(resolve, 1_000).unref();
    }, 10_000).unref();
  });
}

/**
 * The variables the engine process needs, and nothing secret. Not NODE_OPTIONS: an operator's
 * preload (an APM agent's --require) is Sluice's, and in a sandbox that cannot see it, it would
 * keep every engine from starting.
 */
export function engineEnvironment(): Record<string, string> {
  const keep = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'TZ'];
  return {
    ...Object.fromEntries(
      keep.flatMap((name) => (process.env[name] === undefined ? [] : [[name, process.env[name] as string]])),
    ),
    ...THREAD_POOL,
    ...allocatorEnvironment(),
  };
}

/**
 * chDB runs each statement on a thread of Node's pool (4 by default), where it waits for the
 * engine: users' statements beside the pipes' four connections must not wait for a thread.
 */
const THREAD_POOL = { UV_THREADPOOL_SIZE: '16' };

/**
 * chDB's allocator is a jemalloc built into its library, which reads JE_MALLOC_CONF. Asked to,
 * it backs its memory with transparent huge pages where the kernel offers them on request (the
 * `madvise` mode of /sys/kernel/mm/transparent_hugepage/enabled, the usual default): a load then
 * takes one page fault per 2 MB of memory new to the engine rather than per 4 KB, which halved the
 * engine's CPU for the same Kafka backlog (README, "Benchmarks"). An operator's own JE_MALLOC_CONF
 * replaces this one (`thp:default` leaves the pages to the kernel's mode).
 */
export const ENGINE_ALLOCATOR = 'thp:always,metadata_thp:auto';

function allocatorEnvironment(): { JE_MALLOC_CONF: string } {
  return { JE_MALLOC_CONF: process.env.JE_MALLOC_CONF ?? ENGINE_ALLOCATOR };
}

/** Inside the sandbox: its own empty /tmp as home, and the locale and time zone of the host. */
export function sandboxEnvironment(): Record<string, string> {
  const keep = ['LANG', 'LC_ALL', 'TZ'];
  return {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: '/tmp',
    TMPDIR: '/tmp',
    ...THREAD_POOL,
    ...allocatorEnvironment(),
    ...Object.fromEntries(
      keep.flatMap((name) => (process.env[name] === undefined ? [] : [[name, process.env[name] as string]])),
    ),
  };
}

/** The processes a process started (Linux's /proc; none where it cannot be read). */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/**
 * chDB could not open the data because another process holds the directory. chDB reports it with
 * no code, only in words ("Failed to create connection"), so its message is the only signal; it
 * is read here alone.
 */
export function chdbSaysDataHeld(message: string): boolean {
  return /Failed to create connection/.test(message);
}
