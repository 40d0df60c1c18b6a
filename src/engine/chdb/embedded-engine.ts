import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackoffDelays } from '../../backoff.js';
import type { Engine, QueryOptions, QueryResult, RowStream } from '../engine.js';
import {
  EngineError,
  EngineUnavailableError,
  StatementTimeLimitError,
  UnreadableResultError,
} from '../engine.js';
import { writeConfinement } from './confinement.js';
import {
  chdbSaysDataHeld,
  childrenOf,
  endProcess,
  engineEnvironment,
  sandboxEnvironment,
} from './engine-process.js';
import type { EngineHello, EngineReply, EngineRequest } from './protocol.js';
import { readResultFile } from './result-file.js';
import { type SandboxPolicy, type SandboxRoom, sandboxed } from './sandbox.js';
import { clearLeftovers, resultFileName } from './scratch.js';
import { lastJsonDocument, request } from './statement-request.js';

const CHILD = new URL(`./child${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);
/**
 * How long a start waits for the service's data to be free: the engine process of a server that
 * was killed (SIGKILL, an OOM kill) ends once it sees its parent gone, which may take a few
 * seconds while it finishes a statement, and holds the directory until then.
 */
const OPEN_PATIENCE_MS = 30_000;
/**
 * A statement still running this long after its time limit ended with its engine process: a
 * statement may lift its own `max_execution_time` (an admin's `SETTINGS max_execution_time = 0`),
 * but not this.
 */
const PAST_LIMIT_MS = 5_000;

/** How often an engine looks whether it has been idle long enough to stop (at most). */
const IDLE_CHECK_MS = 30_000;

interface Pending {
  /** The process the statement was sent to. */
  child: ChildProcess;
  /** The statement's time limit, counted from when the process says it started it. */
  timeoutMs?: number;
  resolve: (text: string) => void;
  reject: (error: Error) => void;
  /** Ends the engine process when the statement outlives its time limit. */
  deadline?: NodeJS.Timeout;
}

export interface EmbeddedEngineOptions {
  /**
   * A database service's engine is confined (confinement.ts): no statement reaches a host file or
   * the network. Only the source reader, which runs no tenant SQL, and test fixtures are not.
   */
  confined: boolean;
  /** A confined engine's memory in all, which no statement lifts (a statement over it fails). */
  memoryLimitBytes?: number;
  /**
   * Runs when a process has started, before any other statement reaches it (a failure fails the
   * start: the next statement tries again).
   */
  onStart?: (engine: Engine) => Promise<void>;
  /**
   * The process ends after this long without a statement (its memory goes back to the host) and
   * starts again on the next one; 0 or absent: it runs until closed.
   */
  idleStopMs?: number;
  /**
   * The operating-system sandbox the process starts in (sandbox.ts), and what it sees there
   * besides its own data directory. Absent: a plain process (test fixtures only).
   */
  sandbox?: { policy: SandboxPolicy; room: Omit<SandboxRoom, 'writable'> & { writable?: string[] } };
}

/**
 * An embedded service: chDB in a child process over IPC, its data under `path`. The process starts
 * on first use and again after a crash; a statement in flight when it dies fails with a clear error.
 */
export class EmbeddedEngine implements Engine {
  private child: ChildProcess | undefined;
  private starting: Promise<ChildProcess> | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  /** When the last statement was sent or answered. */
  private lastUsed = 0;
  private idleCheck: NodeJS.Timeout | undefined;
  /** An idle process ending: the next start waits for it to let go of the data. */
  private stopping: Promise<void> | undefined;

  constructor(
    private readonly path: string,
    private readonly options: EmbeddedEngineOptions,
  ) {}

  async execute(sql: string, options: QueryOptions = {}): Promise<void> {
    await this.send(request(sql, options), options.timeoutMs);
  }

  async query(sql: string, options: QueryOptions = {}): Promise<QueryResult> {
    const text = await this.send({ ...request(sql, options), format: 'JSON' }, options.timeoutMs);
    // Statements without a result (DDL, INSERT) print nothing even when JSON is asked for.
    if (text.trim() === '') return { columns: [], rows: [] };
    let parsed: { meta?: { name: string; type: string }[]; data?: Record<string, unknown>[] };
    try {
      parsed = JSON.parse(lastJsonDocument(text));
    } catch {
      throw new UnreadableResultError();
    }
    if (!Array.isArray(parsed.meta) || !Array.isArray(parsed.data)) throw new UnreadableResultError();
    return { columns: parsed.meta.map(({ name, type }) => ({ name, type })), rows: parsed.data };
  }

  async produceInto(sql: string, paths: readonly string[], options: QueryOptions = {}): Promise<number> {
    return Number(await this.send({ ...request(sql, options), produceInto: { paths } }, options.timeoutMs));
  }

  /**
   * The statement's rows go to a file of the service's scratch space as the engine makes them
   * (child.ts); once it ended, they are read back a line at a time (protocol.ts, RESULT_FILE_FORMAT).
   */
  async queryRows(sql: string, options: QueryOptions & { maxBytes: number }): Promise<RowStream> {
    const name = resultFileName();
    const remove = () => this.removeScratch(name);
    try {
      await this.send(
        {
          ...request(sql, options),
          resultFile: { path: this.scratchPath(name), maxBytes: options.maxBytes },
        },
        options.timeoutMs,
      );
      return await readResultFile(this.scratchPath(name), remove);
    } catch (error) {
      await remove();
      throw error;
    }
  }

  /**
   * The engine process's id while it runs (for resource measurements): inside a sandbox, the
   * innermost process bubblewrap started.
   */
  processId(): number | undefined {
    let pid = this.child?.pid;
    for (let depth = 0; pid !== undefined && depth < 4; depth += 1) {
      const next = childrenOf(pid)[0];
      if (next === undefined) break;
      pid = next;
    }
    return pid;
  }

  scratchPath(name: string): string {
    return join(this.path, 'scratch', name);
  }

  async removeScratch(name: string): Promise<void> {
    await rm(this.scratchPath(name), { force: true });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.idleCheck);
    await this.starting?.catch(() => {});
    await this.stopping;
    const child = this.child;
    this.child = undefined;
    if (child) await endProcess(child);
  }

  /** Ends the process when it ran no statement for idleStopMs; the next statement starts another. */
  private stopIfIdle(): void {
    const child = this.child;
    const idleFor = Date.now() - this.lastUsed;
    if (!child || this.pending.size > 0 || this.stopping || idleFor < (this.options.idleStopMs ?? 0)) return;
    this.child = undefined;
    this.waitForEnd(endProcess(child));
  }

  /** A process is ending: the next start waits for it (and any other ending) to let go of the data. */
  private waitForEnd(ending: Promise<void>): void {
    const stopping: Promise<void> = (this.stopping ?? Promise.resolve())
      .then(() => ending)
      .finally(() => {
        if (this.stopping === stopping) this.stopping = undefined;
      });
    this.stopping = stopping;
  }

  private async send(message: Omit<EngineRequest, 'id'>, timeoutMs?: number): Promise<string> {
    this.lastUsed = Date.now();
    const child = await this.ensureChild();
    const id = this.nextId++;
    return new Promise<string>((resolve, reject) => {
      const pending: Pending = { child, resolve, reject, ...(timeoutMs !== undefined ? { timeoutMs } : {}) };
      this.pending.set(id, pending);
      child.send({ ...message, id } satisfies EngineRequest, (error) => {
        if (error) {
          this.forget(id);
          reject(new EngineError(`the engine process is not reachable: ${error.message}`, undefined));
        }
      });
    });
  }

  /**
   * The statement outlived its time limit: chDB cannot stop one statement from outside, so the
   * engine process ends (its other statements fail as after a crash: a pipe's batch is read again)
   * and starts again on the next one.
   */
  private pastLimit(child: ChildProcess, id: number, timeoutMs: number): void {
    const waiter = this.forget(id);
    if (!waiter) return;
    waiter.reject(new StatementTimeLimitError(timeoutMs));
    // The next statement starts a new process once this one let go of the data, never this one.
    if (this.child === child) this.child = undefined;
    this.waitForEnd(
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) resolve();
        else child.once('exit', () => resolve());
      }),
    );
    child.kill('SIGKILL');
  }

  /** Takes a statement off the pending ones (its deadline cleared); undefined when it was not. */
  private forget(id: number): Pending | undefined {
    const waiter = this.pending.get(id);
    if (!waiter) return undefined;
    this.pending.delete(id);
    this.lastUsed = Date.now();
    clearTimeout(waiter.deadline);
    return waiter;
  }

  async warm(): Promise<void> {
    await this.ensureChild();
  }

  private ensureChild(): Promise<ChildProcess> {
    if (this.closed) return Promise.reject(new EngineUnavailableError('the engine is closed'));
    if (this.child && this.child.exitCode === null && this.child.connected)
      return Promise.resolve(this.child);
    this.starting ??= (async () => {
      await this.stopping;
      return this.start();
    })().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  /** Starts the engine process, again while the data stays held by another for OPEN_PATIENCE_MS. */
  private async start(): Promise<ChildProcess> {
    const deadline = Date.now() + OPEN_PATIENCE_MS;
    const waits = new BackoffDelays({ baseMs: 100, maxMs: 2_000 });
    for (;;) {
      let child: ChildProcess;
      try {
        child = await this.startOnce();
      } catch (error) {
        const held = error instanceof EngineUnavailableError && chdbSaysDataHeld(error.message);
        const wait = waits.next();
        if (!held || Date.now() + wait > deadline || this.closed) throw error;
        await new Promise((resolve) => setTimeout(resolve, wait));
        continue;
      }
      // Closed while it started: the process goes, or it would hold the data on.
      if (this.closed) {
        child.kill('SIGKILL');
        throw new EngineUnavailableError('the engine is closed');
      }
      return child;
    }
  }

  private async startOnce(): Promise<ChildProcess> {
    // What the sandbox binds must exist (a service's scratch space, the local files directory).
    const room = this.options.sandbox?.room;
    await clearLeftovers(this.path);
    for (const dir of [
      join(this.path, 'scratch'),
      join(this.path, 'tmp'),
      ...(room?.writable ?? []),
      ...(room?.readable ?? []),
    ])
      await mkdir(dir, { recursive: true });
    const args = [
      this.path,
      ...(this.options.confined ? [await writeConfinement(this.path, this.options.memoryLimitBytes)] : []),
    ];
    const execArgv = CHILD.pathname.endsWith('.ts') ? ['--import', 'tsx'] : [];
    const launch = this.launchCommand([process.execPath, ...execArgv, fileURLToPath(CHILD), ...args]);
    const child = spawn(launch.command, launch.args, {
      env: launch.env,
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    await new Promise<void>((resolve, reject) => {
      const onExit = (code: number | null) =>
        reject(new EngineUnavailableError(`the engine process exited (${code}) while starting`));
      child.once('exit', onExit);
      child.once('message', (hello: EngineHello) => {
        child.off('exit', onExit);
        if (hello.ready) resolve();
        else reject(new EngineUnavailableError(`the engine could not open its data: ${hello.error}`));
      });
    });
    child.on('message', (message: EngineReply) => this.settle(message));
    child.on('exit', (code, signal) => {
      if (this.child === child) this.child = undefined;
      const reason = new EngineUnavailableError(
        `the engine process stopped (${signal ?? code}) during the statement`,
      );
      for (const [id, waiter] of [...this.pending]) {
        if (waiter.child === child) this.forget(id)?.reject(reason);
      }
    });
    this.child = child;
    try {
      // Statements of the hook reach this process (it is the engine's now); others wait for the start.
      await this.options.onStart?.(this);
    } catch (error) {
      if (this.child === child) this.child = undefined;
      child.kill('SIGKILL');
      throw new EngineUnavailableError(
        `the engine process started, but its start could not finish: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    const idleStopMs = this.options.idleStopMs ?? 0;
    if (idleStopMs > 0) {
      this.idleCheck ??= setInterval(() => this.stopIfIdle(), Math.min(idleStopMs, IDLE_CHECK_MS));
      this.idleCheck.unref();
    }
    return child;
  }

  /**
   * The process starts in its sandbox, which sees its own data directory and the room's, or as a
   * plain process. Either way it gets none of Sluice's environment (master key, database URL,
   * cloud keys): only what a process needs to run.
   */
  private launchCommand(argv: string[]): { command: string; args: string[]; env: Record<string, string> } {
    const sandbox = this.options.sandbox;
    if (!sandbox) return { command: argv[0] as string, args: argv.slice(1), env: engineEnvironment() };
    const room = {
      ...sandbox.room,
      writable: [this.path, ...(sandbox.room.writable ?? [])],
      tmp: join(this.path, 'tmp'),
    };
    const env =
      sandbox.policy.kind === 'bwrap'
        ? {
            ...sandboxEnvironment(),
            // The IPC channel Node opened for the process on descriptor 3 (stdio above).
            NODE_CHANNEL_FD: '3',
            NODE_CHANNEL_SERIALIZATION_MODE: 'advanced',
          }
        : engineEnvironment();
    return sandboxed(sandbox.policy, room, env, argv);
  }

  private settle(message: EngineReply): void {
    if ('started' in message) {
      const waiter = this.pending.get(message.id);
      const timeoutMs = waiter?.timeoutMs;
      if (waiter && timeoutMs !== undefined && !waiter.deadline) {
        const child = waiter.child;
        waiter.deadline = setTimeout(
          () => this.pastLimit(child, message.id, timeoutMs),
          timeoutMs + PAST_LIMIT_MS,
        );
      }
      return;
    }
    const waiter = this.forget(message.id);
    if (!waiter) return;
    if (message.ok) waiter.resolve(message.text);
    else waiter.reject(EngineError.fromEngineText(message.error));
  }
}
