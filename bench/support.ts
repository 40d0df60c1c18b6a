import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { createSluice, type Sluice } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { Engine } from '../src/engine/index.js';
import { createLogger } from '../src/log.js';
import type { Service } from '../src/store/index.js';

export interface LoadResult {
  requestsPerSecond: number;
  p99Ms: number;
  non2xx: number;
}

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  body?: string;
  headers?: Record<string, string>;
  seconds: number;
  connections: number;
}

/** Drives one URL for `seconds` with `connections` keep-alive connections (autocannon). */
export async function load(options: LoadOptions): Promise<LoadResult> {
  const result = await drive(options);
  return { requestsPerSecond: result.requests.average, p99Ms: result.latency.p99, non2xx: result.non2xx };
}

function drive(options: LoadOptions) {
  return autocannon({
    url: options.url,
    method: options.method ?? 'GET',
    body: options.body,
    headers: options.headers,
    duration: options.seconds,
    connections: options.connections,
  });
}

/** What one target of `interleaved` did over all its slices. */
export interface InterleavedResult extends LoadResult {
  /** This process's cores, event-loop use and the machine's share busy while the target ran. */
  cpu: { processCores: string; eventLoop: string; machineBusy: string };
}

/**
 * Drives each target in turn for `seconds / rounds`, round after round, after a warm-up slice of
 * each that is not counted, and sums each target's slices. Run one after the other, the targets
 * met different machines: the bare route alone went from 27,000 to 38,000 req/s over 12 seconds
 * as the JIT warmed (and a neighbour's burst lands on whichever ran then), so a ratio of two
 * sequential runs moved by a third from one run to the next. Interleaved, drift falls on all alike.
 */
export async function interleaved(
  targets: Record<string, Omit<LoadOptions, 'seconds'>>,
  options: { seconds: number; rounds: number; warmupSeconds?: number },
): Promise<Record<string, InterleavedResult>> {
  const slice = options.seconds / options.rounds;
  for (const target of Object.values(targets)) {
    await drive({ ...target, seconds: options.warmupSeconds ?? 1 });
  }
  const sums = new Map<string, SliceSum>();
  for (let round = 0; round < options.rounds; round++) {
    for (const [name, target] of Object.entries(targets)) {
      const sum = sums.get(name) ?? new SliceSum();
      sums.set(name, sum);
      await sum.add(() => drive({ ...target, seconds: slice }));
    }
  }
  return Object.fromEntries([...sums].map(([name, sum]) => [name, sum.result()]));
}

/** A target's slices added up: requests over seconds, the worst p99, CPU over the slices' time. */
class SliceSum {
  private requests = 0;
  private seconds = 0;
  private p99Ms = 0;
  private non2xx = 0;
  private processMicros = 0;
  private wallMs = 0;
  private loopActive = 0;
  private loopTotal = 0;
  private machineIdle = 0;
  private machineTotal = 0;

  async add(run: () => ReturnType<typeof drive>): Promise<void> {
    const [machine, cpu, loop, wall] = [
      machineTimes(),
      process.cpuUsage(),
      performance.eventLoopUtilization(),
      performance.now(),
    ];
    const result = await run();
    const used = process.cpuUsage(cpu);
    const loopUse = performance.eventLoopUtilization(loop);
    const machineEnd = machineTimes();
    this.requests += result.requests.total;
    this.seconds += result.duration;
    this.p99Ms = Math.max(this.p99Ms, result.latency.p99);
    this.non2xx += result.non2xx;
    this.processMicros += used.user + used.system;
    this.wallMs += performance.now() - wall;
    this.loopActive += loopUse.active;
    this.loopTotal += loopUse.idle + loopUse.active;
    if (machine && machineEnd) {
      this.machineIdle += machineEnd.idle - machine.idle;
      this.machineTotal += machineEnd.total - machine.total;
    }
  }

  result(): InterleavedResult {
    return {
      requestsPerSecond: this.requests / this.seconds,
      p99Ms: this.p99Ms,
      non2xx: this.non2xx,
      cpu: {
        processCores: (this.processMicros / 1e3 / this.wallMs).toFixed(2),
        eventLoop: `${Math.round((this.loopActive / Math.max(this.loopTotal, 1)) * 100)}%`,
        machineBusy: busyBetween({ idle: 0, total: 0 }, { idle: this.machineIdle, total: this.machineTotal }),
      },
    };
  }
}

export function printTable(title: string, rows: Record<string, string | number>[]): void {
  console.log(`\n${title}`);
  console.table(rows);
}

export type Scope = { organizationId: string; serviceId: string };

/** The service a fresh Sluice makes for its bootstrap key, with the scope its pipes are made in. */
export async function defaultService(sluice: Sluice): Promise<{ service: Service; scope: Scope }> {
  const organization = (await sluice.identity.listOrganizations({ organizationId: '', operator: true }))[0];
  const service = (await sluice.identity.listServices(organization?.id ?? ''))[0];
  if (!organization || !service) throw new Error('no default service');
  return { service, scope: { organizationId: organization.id, serviceId: service.id } };
}

/** The organization and service a fresh Sluice makes for its bootstrap key. */
export async function defaultScope(sluice: Sluice): Promise<Scope> {
  return (await defaultService(sluice)).scope;
}

/** Creates a pipe on a backlog and follows it: when it was created, first showed rows, and had all. */
export async function followBacklog(
  sluice: Sluice,
  scope: Scope,
  create: () => Promise<{ id: string }>,
  count: number,
) {
  const start = performance.now();
  const pipe = await create();
  const created = performance.now();
  const createdAt = Date.now();
  // Rows over time; the steady rate runs from the first commit at or past a quarter of the rows to
  // the last full batch (the backlog's tail waits streaming_max_insert_wait_ms for more, as a
  // stream's last partial batch does). Not from the first batch: that is small and runs alone
  // (src/pipes/sources/kafka/reader.ts), so the batches right after it start from an empty
  // pipeline, where before it the next batches loaded beside it and a window from its commit
  // began with them half done.
  // The rows written (committed, so visible) and the state are read from the store every 20 ms,
  // as waitForCompleted does: a status also reads the last hour's history from the service's
  // engine, which loaded the engine being measured (20 ms a read at 10 a second) and left the
  // steady window's ends up to 100 ms off.
  const samples: { at: number; rows: number; machine: ReturnType<typeof machineTimes> }[] = [];
  for (;;) {
    const [progress, { state }] = await Promise.all([
      sluice.store.repos.progress.get(pipe.id),
      sluice.pipes.get(scope, pipe.id),
    ]);
    const rows = progress?.rowsWritten ?? 0;
    if (rows !== samples.at(-1)?.rows) samples.push({ at: performance.now(), rows, machine: machineTimes() });
    if (rows >= count) break;
    if (state === 'Failed')
      throw new Error(`bench pipe failed: ${(await sluice.pipes.status(scope, pipe.id)).reason}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const moving = samples.filter((sample) => sample.rows > 0);
  const [first, lastFull] = [moving[0], moving.at(-2) ?? moving[0]];
  if (!first || !lastFull) throw new Error('no progress seen');
  const steadyFrom = moving.find((sample) => sample.rows >= count / 4 && sample !== lastFull) ?? first;
  const done = samples.at(-1)?.at ?? performance.now();
  // The pipe's move to Running (its store's transitions): the run's start (the source opened,
  // its destinations prepared) before it, the first batch (fetch, flush, stages, load, move,
  // commit) after it.
  const transitions = await sluice.store.repos.pipes.transitions(pipe.id);
  const running = transitions.find((t) => t.toState === 'Running');
  const runningAfterCreate = running ? (running.at.getTime() - createdAt) / 1000 : Number.NaN;
  return {
    pipeId: pipe.id,
    createSeconds: (created - start) / 1000,
    firstRowsSeconds: (first.at - start) / 1000,
    firstRowsAfterResponseSeconds: (first.at - created) / 1000,
    /** From the create's response to the pipe's Running (its source open, destinations ready). */
    runningAfterCreateSeconds: runningAfterCreate,
    totalSeconds: (done - start) / 1000,
    /** From the create's request to 90% of the rows visible: the drain without the tail's wait. */
    ninetySeconds: ((samples.find((sample) => sample.rows >= 0.9 * count)?.at ?? done) - start) / 1000,
    steadyRowsPerSecond: (lastFull.rows - steadyFrom.rows) / ((lastFull.at - steadyFrom.at) / 1000),
    /**
     * From the first batch's commit to the last full batch: the refill after a first batch that ran
     * alone included. The slots commit in bursts, so on a backlog of a few batches the window from
     * a quarter of the rows can hold one burst alone (1.65 of the bare consumer in one run).
     */
    afterFirstRowsPerSecond: (lastFull.rows - first.rows) / ((lastFull.at - first.at) / 1000),
    /** Each change of the rows visible: seconds after the create's request, and the rows. */
    commits: moving.map((sample) => `${((sample.at - start) / 1000).toFixed(2)}s ${sample.rows}`).join(', '),
    /**
     * The machine's share busy over that same window: a figure over the whole run takes in the
     * tail's wait, when nothing runs (a run that read 40% busy in all was 83-87% busy here).
     */
    steadyMachineBusy: busyBetween(steadyFrom.machine, lastFull.machine),
  };
}

/** The machine's CPU time so far, idle and in all (Linux /proc/stat; undefined elsewhere). */
function machineTimes(): { idle: number; total: number } | undefined {
  if (!existsSync('/proc/stat')) return undefined;
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]?.split(/\s+/).slice(1).map(Number) ?? [];
  return { idle: (fields[3] ?? 0) + (fields[4] ?? 0), total: fields.reduce((a, b) => a + b, 0) };
}

/** The machine's share busy between two readings of machineTimes, as a percentage. */
function busyBetween(start: ReturnType<typeof machineTimes>, end: ReturnType<typeof machineTimes>): string {
  if (!start || !end || end.total === start.total) return 'n/a';
  return `${Math.round((1 - (end.idle - start.idle) / (end.total - start.total)) * 100)}%`;
}

/**
 * Where the CPU went between the call and the returned function's call: the whole machine's
 * share busy (Linux /proc/stat; 'n/a' elsewhere), this process's cores and event-loop use.
 */
export function cpuUsage() {
  const [start, cpu, loop, wall] = [
    machineTimes(),
    process.cpuUsage(),
    performance.eventLoopUtilization(),
    performance.now(),
  ];
  return () => {
    const end = machineTimes();
    const used = process.cpuUsage(cpu);
    return {
      machineBusy: busyBetween(start, end),
      processCores: ((used.user + used.system) / 1e3 / (performance.now() - wall)).toFixed(2),
      eventLoop: `${Math.round(performance.eventLoopUtilization(loop).utilization * 100)}%`,
    };
  };
}

export async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await work();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

export function mbps(bytes: number, seconds: number): string {
  return (bytes / 1e6 / seconds).toFixed(1);
}

/** The engine of the scope's service (started on first use). */
export async function serviceOf(sluice: Sluice, scope: Scope): Promise<Service> {
  const service = (await sluice.identity.listServices(scope.organizationId)).find(
    (x) => x.id === scope.serviceId,
  );
  if (!service) throw new Error('no service');
  return service;
}

export async function serviceEngine(sluice: Sluice, scope: Scope): Promise<Engine> {
  return sluice.engines.engineFor(await serviceOf(sluice, scope));
}

/**
 * Sluice in the bench process on a fresh data directory under `dir`, its runtime on, private
 * sources allowed (the bench's servers listen on loopback), logging warnings only.
 */
export function benchSluice(dir: string, env: Record<string, string> = {}): Promise<Sluice> {
  return createSluice(
    loadConfig({
      SLUICE_DATA_DIR: join(dir, 'data'),
      SLUICE_RATE_LIMIT: '0',
      SLUICE_ALLOW_PRIVATE_SOURCES: 'true',
      SLUICE_BOOTSTRAP_KEY_ID: 'sk_bench',
      SLUICE_BOOTSTRAP_KEY_SECRET: 'bench-secret-0123456789',
      ...env,
    }),
    { logger: createLogger('warn') },
  );
}

/**
 * The default service's engine, with it and the source reader started: they start on first use,
 * so a pipe timed after this measures ingest rather than two engine processes starting.
 */
export async function warmEngines(sluice: Sluice, scope: Scope): Promise<Engine> {
  const engine = await serviceEngine(sluice, scope);
  await engine.query('SELECT 1');
  await sluice.engines.sourceReaderFor(await serviceOf(sluice, scope)).query('SELECT 1');
  return engine;
}

/** utime + stime of a process in clock ticks (100 a second on Linux), with its reaped children's. */
export function ticks(pid: number, withReaped: boolean): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command's closing parenthesis, from the state (field 3) on.
    const fields = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    const own = (fields[11] ?? 0) + (fields[12] ?? 0);
    return withReaped ? own + (fields[13] ?? 0) + (fields[14] ?? 0) : own;
  } catch {
    return 0;
  }
}

export function childrenOf(parent: number): number[] {
  if (!existsSync('/proc')) return [];
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent)
        children.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}

export function machineTicks(): { idle: number; total: number } | undefined {
  if (!existsSync('/proc/stat')) return undefined;
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]?.split(/\s+/).slice(1).map(Number) ?? [];
  return { idle: (fields[3] ?? 0) + (fields[4] ?? 0), total: fields.reduce((a, b) => a + b, 0) };
}

/**
 * Waits for a one-off pipe to be Completed, reading its state from the store (get), not its status:
 * a status also reads the last hour's history from the service's engine, which would load the
 * engine being measured.
 */
export async function waitForCompleted(sluice: Sluice, scope: Scope, pipeId: string, pollMs: number) {
  for (;;) {
    const { state } = await sluice.pipes.get(scope, pipeId);
    if (state === 'Completed') return;
    if (state === 'Failed')
      throw new Error(`bench pipe failed: ${(await sluice.pipes.status(scope, pipeId)).reason}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
