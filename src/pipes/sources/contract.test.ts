import { describe, expect, it } from 'vitest';
import {
  checksChanges,
  cleansUpOnDelete,
  explainsCompletion,
  explainsRunFailure,
  limitsInFlight,
  ownsItsStates,
  reportsIdleStatus,
  reportsLiveStatus,
  reportsStatus,
  type SourceRun,
  sharesCdcCapacity,
  tracksCommits,
  writesItsOwnTables,
  writesSeveralTables,
} from './contract.js';
import { SOURCE_KINDS } from './index.js';

const RUN_GUARDS = [
  limitsInFlight,
  writesSeveralTables,
  ownsItsStates,
  explainsCompletion,
  reportsLiveStatus,
  tracksCommits,
];

/** A run with none of the capabilities: the runtime's defaults apply. */
const plain: SourceRun = {
  firstCursor: null,
  pollMs: 100,
  next: async () => 'idle',
  read: async () => ({ rows: 0, badRecords: [] }) as never,
  close: async () => {},
};

/** A run whose capabilities are a getter and methods of its class, as the database pipe's run. */
class Phased {
  readonly firstCursor = null;
  readonly pollMs = 100;
  readonly ownsState = true;
  readonly completion = 'snapshot complete';
  tables = [];
  private phase: 'snapshot' | 'changes' = 'snapshot';
  get inFlight(): number {
    return this.phase === 'changes' ? 1 : 4;
  }
  async next() {
    this.phase = 'changes';
    return 'idle' as const;
  }
  read = plain.read;
  async close() {}
  status() {
    return {};
  }
  async committed() {}
}

describe('the capabilities of a source, asked with their guards', () => {
  it('a run without any: none of the guards says yes', () => {
    expect(RUN_GUARDS.map((has) => has(plain))).toEqual([false, false, false, false, false, false]);
  });

  it('a class’s getter and methods count, and the guard does not read the getter', async () => {
    const run = new Phased();
    expect(RUN_GUARDS.map((has) => has(run))).toEqual([true, true, true, true, true, true]);
    if (!limitsInFlight(run)) throw new Error('unreachable');
    expect(run.inFlight).toBe(4);
    await run.next();
    expect(run.inFlight).toBe(1);
  });

  it('each connector has the capabilities its kind needs, and only those', () => {
    const guards = {
      checksChanges,
      cleansUpOnDelete,
      reportsIdleStatus,
      explainsRunFailure,
      writesItsOwnTables,
      sharesCdcCapacity,
      reportsStatus,
    };
    const has = (kind: string) => {
      const connector = SOURCE_KINDS.find((known) => known.name === kind)?.connector;
      if (!connector) throw new Error(`no connector for ${kind}`);
      return Object.entries(guards)
        .filter(([, guard]) => guard(connector))
        .map(([name]) => name);
    };
    expect(has('kafka')).toEqual(['reportsStatus']);
    expect(has('kinesis')).toEqual(['cleansUpOnDelete', 'reportsStatus']);
    expect(has('objectStorage')).toEqual([]);
    expect(has('postgres')).toEqual(Object.keys(guards));
  });
});
