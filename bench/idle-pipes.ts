import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminKey, serverPid, start, startedByNpm, stop, treeRss } from './footprint.js';
import { printTable } from './support.js';

const PIPES = Number(process.env.BENCH_IDLE_PIPES ?? 1000);
const SETTLE_MS = 20_000;
/** The longest the idle pipes' stages may take to go: their minute idle and a 30 s poll, with room. */
const STAGES_GONE_MS = 180_000;
/**
 * When the last run made has passed its one check for stages to drop: a run with nothing to read
 * asks the service's engine for its stages once, at its first poll a minute after it started
 * (src/pipes/runtime/idle-stages.ts; the poll comes every 30 s), whether or not it made any. That
 * is a pipe's first minute, not its idle cost: with 1,000 such checks inside the watch the engines
 * read 0.058-0.070 of a core, against 0.004 once they are behind it.
 */
const FIRST_IDLE_CHECK_MS = 60_000 + 30_000 + 10_000;
const WATCH_MS = Number(process.env.BENCH_IDLE_WATCH_SECONDS ?? 60) * 1000;
const GOAL_MB = 1024;
const GOAL_CORE = 0.05;
/** Clock ticks a second of /proc/<pid>/stat's times (`getconf CLK_TCK`; 100 on Linux). */
const TICKS = 100;

/**
 * What idle pipes cost one node as they grow: Sluice started as a user starts it (`npm start`),
 * with PIPES continuous object-storage pipes watching for files that do not come (each lists its
 * folder every object_storage_polling_interval_ms, 30 s by default), against the same Sluice with
 * no pipe, measured in the same run: the memory of Sluice and every process under it (proportional
 * set size, shared pages once) and the share of a core they use over WATCH_MS.
 */
export async function benchIdlePipes(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-bench-idle-pipes-'));
  const dataDir = join(dir, 'data');
  // BENCH_IDLE_NODE_OPTIONS reaches the Sluice process only (e.g. `--inspect=9229`, to attach a
  // profiler: where inside Sluice the CPU goes). Node refuses `--cpu-prof` in NODE_OPTIONS; for a
  // profile file run `node --cpu-prof bin/sluice.js serve` and make the pipes against it.
  const nodeOptions = process.env.BENCH_IDLE_NODE_OPTIONS;
  const child = startedByNpm(dataDir, {
    SLUICE_RATE_LIMIT: '0',
    ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
  });
  try {
    const started = await start(child);
    const pid = await serverPid(dataDir);
    const key = adminKey(started.output);
    const service = /Pipes live at (\S+)\/pipes/.exec(started.output)?.[1];
    if (!key || !service) throw new Error(`no key or service in the banner:\n${started.output}`);
    const headers = {
      authorization: `Basic ${Buffer.from(key).toString('base64')}`,
      'content-type': 'application/json',
    };
    const post = async (path: string, body: unknown) => {
      const response = await fetch(`${service}${path}`, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
      });
      if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
      return response.json() as Promise<{ result?: { rows?: Record<string, unknown>[] } }>;
    };
    await post('/query', { sql: 'CREATE TABLE idle (id Int64) ENGINE = MergeTree ORDER BY id' });
    const files =
      /Local files for file:\/\/ pipes: (\S+)/.exec(started.output)?.[1] ?? join(dataDir, 'files');
    await mkdir(join(files, 'later'), { recursive: true });
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const none = await watch(pid);

    const began = performance.now();
    for (let i = 0; i < PIPES; i += 10) {
      await Promise.all(
        Array.from({ length: Math.min(10, PIPES - i) }, (_, j) =>
          post('/pipes', {
            name: `idle ${i + j}`,
            source: {
              objectStorage: { format: 'JSONEachRow', url: 'file:///later/*.ndjson', isContinuous: true },
            },
            destination: {
              database: 'default',
              table: 'idle',
              managedTable: false,
              columns: [{ name: 'id', type: 'Int64' }],
            },
          }),
        ),
      );
    }
    const made = performance.now();
    const createSeconds = (made - began) / 1000;
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    // An object-storage run makes no stages ahead of its first batch (NoStagesAhead in
    // src/pipes/sources/contract.ts), and a run with nothing to read drops any it has after a
    // minute (idle-stages.ts): idle is watched once none is left and that minute's check is behind.
    const settled = performance.now();
    for (;;) {
      const answer = await post('/query', {
        sql: "SELECT count() AS n FROM system.tables WHERE database = '_sluice_staging'",
      });
      if (Number(answer.result?.rows?.[0]?.n) === 0) break;
      if (performance.now() - settled > STAGES_GONE_MS) throw new Error('the idle pipes kept their stages');
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    const stagesGoneSeconds = (performance.now() - began) / 1000 - createSeconds;
    const checksBehind = made + FIRST_IDLE_CHECK_MS - performance.now();
    if (checksBehind > 0) await new Promise((resolve) => setTimeout(resolve, checksBehind));
    const idle = await watch(pid);
    const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);
    const row = (what: string, m: Watched, goal: string) => ({
      what,
      processes: m.processes,
      'PSS MB': mb(m.pss),
      'x no pipe (PSS)': (m.pss / none.pss).toFixed(2),
      'core share': m.core.toFixed(3),
      Sluice: m.byRole.Sluice.toFixed(3),
      engines: m.byRole.engines.toFixed(3),
      'source reader': m.byRole['source reader'].toFixed(3),
      goal,
    });
    printTable(
      `Idle pipes on one node: Sluice from \`npm start\` and every process under it, watched ${WATCH_MS / 1000} s (${PIPES} pipes made in ${createSeconds.toFixed(1)} s; no stage left ${stagesGoneSeconds.toFixed(0)} s after, watched from ${(FIRST_IDLE_CHECK_MS / 1000).toFixed(0)} s after)`,
      [
        row('no pipe (baseline)', none, ''),
        row(
          `${PIPES} idle continuous pipes`,
          idle,
          `under ${GOAL_MB} MB (${mb(idle.pss) < GOAL_MB ? 'met' : 'not met'}) and ${GOAL_CORE} of a core (${idle.core < GOAL_CORE ? 'met' : 'not met'})`,
        ),
      ],
    );
  } finally {
    await stop(child, dataDir);
    await rm(dir, { recursive: true, force: true });
  }
}

type Role = 'Sluice' | 'engines' | 'source reader';

interface Watched {
  processes: number;
  pss: number;
  /** CPU seconds the process tree used per second watched. */
  core: number;
  /** The same, by what the processes are: Sluice, the services' engines, the source readers. */
  byRole: Record<Role, number>;
}

/** The tree's memory at the end of WATCH_MS, and the CPU it used over it. */
async function watch(root: number): Promise<Watched> {
  const before = await treeRss(root);
  const cpuBefore = await cpuTicks(before.pids);
  const from = performance.now();
  await new Promise((resolve) => setTimeout(resolve, WATCH_MS));
  const after = await treeRss(root);
  // A process that started during the watch counts from zero; one that ended is lost (none should).
  const cpuAfter = await cpuTicks(after.pids);
  const seconds = (performance.now() - from) / 1000;
  const byRole: Record<Role, number> = { Sluice: 0, engines: 0, 'source reader': 0 };
  let used = 0;
  for (const [pid, ticks] of cpuAfter) {
    const share = (ticks - (cpuBefore.get(pid) ?? 0)) / TICKS / seconds;
    used += share;
    byRole[await roleOf(pid, root)] += share;
  }
  return { processes: after.processes, pss: after.pss, core: used, byRole };
}

/**
 * What a process of the tree is: a source reader's engine runs on `<data dir>/readers/<service>`
 * (src/engine/registry.ts, sourceReaderFor); every other process under Sluice is a service's engine
 * or the sandbox that launches it.
 */
async function roleOf(pid: number, root: number): Promise<Role> {
  if (pid === root) return 'Sluice';
  const command = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  return command.includes('/readers/') ? 'source reader' : 'engines';
}

/** utime + stime of each process, in clock ticks. */
async function cpuTicks(pids: number[]): Promise<Map<number, number>> {
  const ticks = new Map<number, number>();
  for (const pid of pids) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    if (!stat) continue;
    // Fields after "pid (comm) ": state is the 1st, utime the 12th, stime the 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks.set(pid, Number(fields[11]) + Number(fields[12]));
  }
  return ticks;
}
