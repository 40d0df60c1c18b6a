import { type Engine, literal } from '../src/engine/index.js';

/** The engine's own counters (its `system.events`, for the whole engine process) a bench reads. */
const COUNTERS = [
  'UserTimeMicroseconds',
  'SystemTimeMicroseconds',
  'SoftPageFaults',
  'FileOpen',
  'MergedRows',
] as const;

type Counters = Record<(typeof COUNTERS)[number], number>;

const PAGE_BYTES = 4096;

const NONE = Object.fromEntries(COUNTERS.map((name) => [name, 0])) as Counters;

/**
 * Where the service's engine spends its CPU, by its own account: user and system time, and the
 * page faults behind much of the system time on a virtual machine that hands freed memory back to
 * its host (README, "Benchmarks": each new page the engine touches is fetched and zeroed again).
 * Read before and after a phase, or (`sinceStart`) only after a phase the engine process started
 * with (a read before would start it early); `describe` says what the phase cost.
 */
export async function engineCounters(
  engine: Engine,
  { sinceStart = false } = {},
): Promise<{ describe(): Promise<string> }> {
  const start = sinceStart ? NONE : await read(engine);
  return {
    async describe() {
      const end = await read(engine);
      const used = (name: keyof Counters) => end[name] - start[name];
      const faults = used('SoftPageFaults');
      return `the service engine by its own counters: user ${(used('UserTimeMicroseconds') / 1e6).toFixed(1)} s, system ${(used('SystemTimeMicroseconds') / 1e6).toFixed(1)} s, ${faults} page faults (${Math.round((faults * PAGE_BYTES) / 1e6)} MB of memory new to it), ${used('FileOpen')} files opened, ${used('MergedRows')} rows merged`;
    },
  };
}

async function read(engine: Engine): Promise<Counters> {
  const names = COUNTERS.map(literal).join(', ');
  const { rows } = await engine.query(`SELECT event, value FROM system.events WHERE event IN (${names})`);
  const found = new Map(rows.map((row) => [String(row.event), Number(row.value)]));
  return Object.fromEntries(COUNTERS.map((name) => [name, found.get(name) ?? 0])) as Counters;
}
