import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

/** One process: its parent, what it runs (as `ps` shows it) and when it started (Linux). */
interface ProcessInfo {
  ppid: number;
  command: string;
  startedAt: string;
}

/**
 * The npm process that started this one, when npm did: `npm start` runs the server in its place
 * (the start script execs), `npx sluice serve` and other npm scripts run it under `sh -c`. npm
 * passes on SIGINT and SIGTERM only; a SIGHUP (or SIGKILL) ends npm and would leave the server
 * running with no parent, holding the port and the data directory. The server watches this
 * process and stops when it is gone (README, "Operations"). A server started any other way (a
 * shell, a service manager, `node bin/sluice.js serve &`) has no npm ancestor and is not tied to
 * its parent: a shell that exits normally leaves it running.
 */
export function npmAncestor(): { pid: number; startedAt: string } | undefined {
  // npm sets npm_execpath in the environment of everything it runs.
  if (!process.env.npm_execpath) return undefined;
  let pid = process.ppid;
  // Only a shell (`sh -c`) may stand between npm and the server.
  for (let depth = 0; depth < 2 && pid > 1; depth++) {
    const info = processInfo(pid);
    if (!info) return undefined;
    if (isNpm(info.command)) return { pid, startedAt: info.startedAt };
    if (!isShell(info.command)) return undefined;
    pid = info.ppid;
  }
  return undefined;
}

/** Calls `gone` once, within a second of the process ending (a new process with its pid is not it). */
export function whenGone(watched: { pid: number; startedAt: string }, gone: () => void): void {
  const timer = setInterval(() => {
    if (stillRunning(watched)) return;
    clearInterval(timer);
    gone();
  }, 1000);
  timer.unref();
}

function stillRunning(watched: { pid: number; startedAt: string }): boolean {
  if (process.platform === 'linux') {
    try {
      return fromProc(watched.pid).startedAt === watched.startedAt;
    } catch {
      return false;
    }
  }
  try {
    process.kill(watched.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** npm names its process after the command (`npm start`, `npm exec sluice`), else its script's path. */
function isNpm(command: string): boolean {
  return /^np[mx](\s|$)/.test(command) || /\bnp[mx]-cli\.js\b/.test(command);
}

function isShell(command: string): boolean {
  return ['sh', 'bash', 'dash', 'zsh', 'ash'].includes(basename(command.split(/\s/)[0] ?? ''));
}

function processInfo(pid: number): ProcessInfo | undefined {
  if (process.platform !== 'linux') return fromPs(pid);
  try {
    return fromProc(pid);
  } catch {
    return undefined;
  }
}

/** Linux: /proc/<pid>/stat and cmdline (npm's title replaces its cmdline). */
function fromProc(pid: number): ProcessInfo {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name may hold spaces and parentheses: the fields that follow start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  return { ppid: Number(fields[1]), command, startedAt: fields[19] ?? '' };
}

/** Elsewhere (macOS, the BSDs): ps. */
function fromPs(pid: number): ProcessInfo | undefined {
  try {
    const line = execFileSync('ps', ['-o', 'ppid=,lstart=,args=', '-p', String(pid)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    const match = /^(\d+)\s+(\w{3}\s+\w{3}\s+\d+\s+[\d:]+\s+\d+)\s+(.*)$/.exec(line);
    return match ? { ppid: Number(match[1]), startedAt: match[2] ?? '', command: match[3] ?? '' } : undefined;
  } catch {
    return undefined;
  }
}
