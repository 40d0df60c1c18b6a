import { execFile } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * The operating-system boundary of every engine process (README, "Security"): bubblewrap (the
 * sandbox Flatpak uses, Debian's `bubblewrap`) starts the process in new namespaces where it sees
 * only its room, the files it needs to run (read-only), its own `/proc`, its own `/tmp`, an empty
 * environment and no capabilities; a service's engine has no network at all, and the process dies
 * with Sluice. Grants and text checks (confinement.ts, statement.ts) stay as friendly first errors.
 *
 * Why bubblewrap: a small setuid-free tool made for exactly this, packaged by Debian, kept by the
 * Flatpak project; it needs no daemon and no image, and starts a process in a few milliseconds.
 */

/** What one engine process may see besides what it needs to run. */
export interface SandboxRoom {
  /** Directories it may read and write: its own data, a service's scratch space. */
  writable: string[];
  /** Directories it may only read (the local files directory, for a source reader). */
  readable: string[];
  /** Whether it reaches the network (a source reader does; a service's engine never). */
  network: boolean;
  /** Directories hidden even where a bound directory holds them (the data directory's root). */
  hidden: string[];
  /**
   * A directory of its own on disk seen as `/tmp` (what the engine spills there stays on the
   * service's disk, not in memory); absent: an empty `/tmp` in memory.
   */
  tmp?: string;
}

/** How engine processes start: inside bubblewrap, or (where it cannot run) as plain processes. */
export type SandboxPolicy = { kind: 'bwrap'; command: string } | { kind: 'none'; reason: string };

/** What a start reports of the sandbox, for the log, `/health` and the tenant SQL rule. */
export interface SandboxStatus {
  sandboxed: boolean;
  /** `bwrap`, or why engine processes run without a sandbox. */
  detail: string;
}

export function sandboxStatus(policy: SandboxPolicy): SandboxStatus {
  return policy.kind === 'bwrap'
    ? { sandboxed: true, detail: 'bwrap' }
    : { sandboxed: false, detail: policy.reason };
}

const INSTALL_HINT =
  'install bubblewrap (Debian and Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`); in a container, run it with `--security-opt seccomp=unconfined --cap-add SYS_ADMIN` or as root (README, "Security")';

/**
 * Finds a working bubblewrap: the program on PATH (or SLUICE_BWRAP) that starts a process in a
 * room like an engine's. `off` is the operator's explicit choice (README, "Security").
 */
export async function detectSandbox(setting: 'auto' | 'off', bwrap = 'bwrap'): Promise<SandboxPolicy> {
  if (setting === 'off') return { kind: 'none', reason: 'turned off (SLUICE_SANDBOX=off)' };
  const room: SandboxRoom = { writable: [], readable: [], network: false, hidden: [] };
  try {
    await promisify(execFile)(bwrap, [...bwrapArgs(room, {}), '--', process.execPath, '-e', ''], {
      timeout: 10_000,
    });
    return { kind: 'bwrap', command: bwrap };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'bubblewrap (bwrap) is not installed'
        : `bubblewrap cannot start a sandbox here (${firstLine(error)})`;
    return { kind: 'none', reason: `${why}: ${INSTALL_HINT}` };
  }
}

function firstLine(error: unknown): string {
  const text = String((error as { stderr?: string }).stderr || (error as Error).message || error);
  return text.trim().split('\n')[0] ?? '';
}

/** The command that starts `argv` (a program and its arguments) in `room` under the policy. */
export function sandboxed(
  policy: SandboxPolicy,
  room: SandboxRoom,
  env: Record<string, string>,
  argv: string[],
): { command: string; args: string[]; env: Record<string, string> } {
  const [program, ...rest] = argv as [string, ...string[]];
  if (policy.kind === 'none') return { command: program, args: rest, env };
  // Variables reach the process through --setenv only; bubblewrap itself gets none.
  return { command: policy.command, args: [...bwrapArgs(room, env), '--', ...argv], env: {} };
}

/** The system's own directories: read-only, or the symbolic links they are on merged-/usr systems. */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64'];
/**
 * Files a process needs to run: the loader's cache, the local time zone, what the engine reads of
 * its own limits (cgroup memory and the CPUs), and the kernel's huge-page mode, which its allocator
 * reads before it asks for huge pages (ENGINE_ALLOCATOR, engine-process.ts); none tells anything of
 * other processes.
 */
const SYSTEM_FILES = [
  '/etc/ld.so.cache',
  '/etc/localtime',
  '/sys/fs/cgroup',
  '/sys/devices/system/cpu',
  '/sys/kernel/mm/transparent_hugepage',
];
/** What a process that reaches the network needs besides: name resolution and CA certificates. */
const NETWORK_FILES = [
  '/etc/resolv.conf',
  '/etc/hosts',
  '/etc/nsswitch.conf',
  '/etc/gai.conf',
  '/etc/ssl',
  '/etc/ca-certificates',
  '/etc/pki',
];

function bwrapArgs(room: SandboxRoom, env: Record<string, string>): string[] {
  const args = [
    '--unshare-all',
    ...(room.network ? ['--share-net'] : []),
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    '--clearenv',
    '--hostname',
    'sluice-engine',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    ...(room.tmp ? ['--bind', room.tmp, '/tmp'] : ['--tmpfs', '/tmp']),
  ];
  for (const dir of SYSTEM_DIRS) {
    if (!existsSync(dir)) continue;
    if (lstatSync(dir).isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else args.push('--ro-bind', dir, dir);
  }
  for (const file of [...SYSTEM_FILES, ...(room.network ? NETWORK_FILES : [])])
    args.push('--ro-bind-try', file, file);
  for (const dir of runtimeDirs()) args.push('--ro-bind', dir, dir);
  for (const dir of room.hidden) args.push('--tmpfs', dir);
  for (const dir of room.readable) args.push('--ro-bind', dir, dir);
  for (const dir of room.writable) args.push('--bind', dir, dir);
  // The tmpfs that hides a directory lives in memory: read-only, so no statement fills it (the
  // directories bound inside it are mounts of their own and keep their rights).
  for (const dir of room.hidden) args.push('--remount-ro', dir);
  // Where Node resolves the preloads it is given by name (`--import tsx` under the tests).
  args.push('--chdir', packageRoot(dirname(fileURLToPath(import.meta.url))));
  for (const [name, value] of Object.entries(env)) args.push('--setenv', name, value);
  return args;
}

/**
 * What Node needs to run an engine process, read-only: its own installation, and Sluice's code
 * and dependencies (chDB's library among them), never the package's whole folder, where a data
 * directory may live (`./data` is the default).
 */
function runtimeDirs(): string[] {
  const node = dirname(dirname(realpathSync(process.execPath)));
  const root = packageRoot(dirname(fileURLToPath(import.meta.url)));
  const dirs = [
    node,
    join(root, 'package.json'),
    join(root, 'node_modules'),
    join(root, 'dist'),
    join(root, 'src'),
  ];
  const chdb = realpathSync(createRequire(import.meta.url).resolve('chdb'));
  const modules = chdb.slice(0, chdb.lastIndexOf(`${sep}node_modules${sep}`) + `${sep}node_modules`.length);
  dirs.push(modules);
  return [...new Set(dirs)].filter(
    (dir) => existsSync(dir) && !SYSTEM_DIRS.some((system) => within(dir, system)),
  );
}

function within(path: string, dir: string): boolean {
  return path === dir || path.startsWith(`${dir}${sep}`);
}

function packageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) return from;
  }
}
