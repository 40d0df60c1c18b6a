import { type ChildProcess, spawn } from 'node:child_process';

/** What a command printed, and how it ended. */
export interface ChildResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A `sluice serve` that is listening, and everything it printed so far. */
export interface Listening {
  child: ChildProcess;
  url: string;
  output: () => string;
}

/** Runs a command to its end (with `input` on its stdin) and collects what it prints. */
export function runToEnd(
  command: string,
  args: string[],
  options: { env: Record<string, string>; cwd?: string; input?: string | undefined },
): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      ...(options.cwd ? { cwd: options.cwd } : {}),
      env: { ...process.env, ...options.env },
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk) => (stdout += chunk));
    child.stderr?.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Starts what runs `sluice serve`; resolves once it prints where it listens. */
export function startListening(
  command: string,
  args: string[],
  options: { env: Record<string, string>; cwd?: string; timeoutMs: number },
): Promise<Listening> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      ...(options.cwd ? { cwd: options.cwd } : {}),
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const what = [command, ...args].join(' ');
    let output = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not start:\n${output}`)), options.timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk;
      const match = /Sluice is listening on (\S+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve({ child, url: match[1], output: () => output });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code}:\n${output}`));
    });
  });
}

/** SIGTERM, and the process gone (its data directory is no longer written: a test may remove it). */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
