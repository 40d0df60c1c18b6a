import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { EmbeddedEngine, type EngineRegistry } from '../../engine/index.js';
import { EVENTS, MINUTES } from '../history/index.js';
import type { RuntimeView } from '../runtime-port.js';
import { HistoryRecorder, type RunSample } from './history-recorder.js';

/**
 * The recorder's minute rows on a real engine (chDB), with the runtime around it told as plain
 * functions and the clock moved a minute per tick (only Date is faked: the engine's own timers run).
 */
describe('the pipe history recorder: a row a minute for pipes in trouble (chDB)', () => {
  let dir: string;
  let engine: EmbeddedEngine;
  const states = new Map<string, string>();
  const samples = new Map<string, RunSample>();
  let running: string[] = [];
  let failed: { pipeId: string; errorCode: string }[] = [];
  let recorder: HistoryRecorder;
  let queries = 0;
  /** How long each next read of a pipe's row takes, in order (none: at once). */
  let viewDelays: number[] = [];
  /** The states written by each INSERT, in the order the engine was asked. */
  const inserted: string[][] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-recorder-'));
    engine = new EmbeddedEngine(join(dir, 'engine'), { confined: false });
    recorder = new HistoryRecorder({
      engines: {
        engineFor: () => ({
          query: (sql: string, options: object) => {
            queries += 1;
            return engine.query(sql, options);
          },
          execute: (sql: string, options: object) => {
            if (sql.startsWith('INSERT'))
              inserted.push([...sql.matchAll(/"state":"(\w+)"/g)].map((m) => m[1] ?? ''));
            return engine.execute(sql, options);
          },
        }),
      } as unknown as EngineRegistry,
      logger: pino({ level: 'silent' }),
      days: 30,
      view: async (pipeId) => {
        const delay = viewDelays.shift() ?? 0;
        if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
        return states.has(pipeId)
          ? ({
              row: { id: pipeId, name: `pipe ${pipeId}`, state: states.get(pipeId) },
            } as unknown as RuntimeView)
          : undefined;
      },
      running: () => running,
      notRunning: async () => running.filter((id) => states.get(id) !== 'Running'),
      failed: async () => failed,
      sample: (pipeId) => samples.get(pipeId),
    });
  });
  afterEach(() => vi.useRealTimers());
  afterAll(async () => {
    await engine.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Ticks once a minute for `minutes` minutes from `start`. */
  async function tickEveryMinute(start: string, minutes: number): Promise<void> {
    vi.useFakeTimers({ toFake: ['Date'] });
    for (let minute = 0; minute < minutes; minute++) {
      vi.setSystemTime(new Date(Date.parse(start) + minute * 60_000 + 30_000));
      await recorder.tick();
    }
    vi.useRealTimers();
  }

  const minutesOf = async (pipeId: string) =>
    (
      await engine.query(
        `SELECT toString(minute) AS minute, state, lag, lag_parts, transitions, error_code
           FROM ${MINUTES} WHERE pipe_id = '${pipeId}' ORDER BY minute`,
      )
    ).rows;

  it('a Failed pipe counts every minute it stays Failed, with its code, as no transition', async () => {
    states.set('f', 'Failed');
    failed = [{ pipeId: 'f', errorCode: 'SLUICE_ERR_SOURCE_AUTH' }];
    await tickEveryMinute('2026-11-27T10:00:00Z', 5);
    const minutes = await minutesOf('f');
    expect(minutes.map((m) => [m.minute, m.state, m.error_code, m.transitions])).toEqual(
      [0, 1, 2, 3, 4].map((i) => [`2026-11-27 10:0${i}:00`, 'Failed', 'SLUICE_ERR_SOURCE_AUTH', 0]),
    );
    // What the "minutes Degraded or Failed" health alert counts over its 5 minutes.
    const [counted] = (
      await engine.query(
        `SELECT count() AS n FROM ${MINUTES} WHERE pipe_id = 'f' AND state IN ('Degraded', 'Failed')
           AND minute >= '2026-11-27 10:00:00' AND minute < '2026-11-27 10:05:00'`,
      )
    ).rows;
    expect(Number(counted?.n)).toBe(5);
    // Started again: no longer Failed, no more rows.
    states.set('f', 'Running');
    failed = [];
    await tickEveryMinute('2026-11-27T10:05:00Z', 2);
    expect(await minutesOf('f')).toHaveLength(5);
  });

  it('a Degraded pipe this node runs writes its last lag, in all and per partition', async () => {
    states.set('d', 'Degraded');
    running = ['d'];
    samples.set('d', {
      lag: { total: 120_000, parts: { 'events/0': 100_000, 'events/1': 20_000 } },
      quiet: true,
    });
    await tickEveryMinute('2026-11-27T11:00:00Z', 2);
    expect(await minutesOf('d')).toEqual(
      ['2026-11-27 11:00:00', '2026-11-27 11:01:00'].map((minute) => ({
        minute,
        state: 'Degraded',
        lag: 120_000,
        lag_parts: { 'events/0': 100_000, 'events/1': 20_000 },
        transitions: 0,
        error_code: '',
      })),
    );
  });

  it('a Running pipe writes a minute row only when it committed nothing and lags behind', async () => {
    for (const id of ['stalled', 'busy', 'caught-up']) states.set(id, 'Running');
    running = ['stalled', 'busy', 'caught-up'];
    samples.set('stalled', { lag: { total: 500_000, parts: {} }, quiet: true });
    samples.set('busy', { lag: { total: 500_000, parts: {} }, quiet: false });
    samples.set('caught-up', { lag: { total: 0, parts: {} }, quiet: true });
    await tickEveryMinute('2026-11-27T12:00:00Z', 3);
    expect((await minutesOf('stalled')).map((m) => [m.state, m.lag])).toEqual([
      ['Running', 500_000],
      ['Running', 500_000],
      ['Running', 500_000],
    ]);
    expect(await minutesOf('busy')).toEqual([]);
    expect(await minutesOf('caught-up')).toEqual([]);
    // Minute rows are neither batches nor transitions: the sums stay the batches'.
    const [kinds] = (
      await engine.query(`SELECT groupUniqArray(kind) AS kinds, sum(rows) AS rows FROM ${EVENTS}`)
    ).rows;
    expect(kinds).toEqual({ kinds: ['minute'], rows: 0 });
  });

  it('a pipe that is stopped, or that no node runs and is not Failed, writes nothing', async () => {
    states.set('s', 'Stopped');
    running = [];
    failed = [];
    await tickEveryMinute('2026-11-27T13:00:00Z', 2);
    expect(await minutesOf('s')).toEqual([]);
  });

  it("writes a pipe's state rows in the order of its moves, each at its move's time, and settles once all are written", async () => {
    states.set('m', 'Running');
    inserted.length = 0;
    // The first move's write is the slowest to start: written at once, it would land last.
    viewDelays = [80, 0, 40, 0];
    const moves = ['Running', 'Degraded', 'Running', 'Stopped'];
    for (const state of moves) void recorder.moved('m', state);
    const movedBy = Date.now();
    await recorder.settled();
    expect(inserted).toEqual(moves.map((state) => [state]));
    const rows = (
      await engine.query(
        `SELECT state, toUnixTimestamp64Milli(at) AS at FROM ${EVENTS} WHERE pipe_id = 'm' AND kind = 'state'`,
      )
    ).rows;
    expect(rows.map((row) => row.state).sort()).toEqual([...moves].sort());
    // Each row says when the pipe moved, not when its write came (80 ms and more later).
    for (const row of rows) expect(Number(row.at)).toBeLessThanOrEqual(movedBy);
  });

  it("a status's last hour is read from the engine once a minute, and again after each row written", async () => {
    states.set('h', 'Degraded');
    running = ['h'];
    samples.set('h', { lag: { total: 7, parts: {} }, quiet: true });
    const view = { row: { id: 'h', name: 'pipe h', state: 'Degraded' } } as unknown as RuntimeView;
    const at = new Date('2026-11-27T14:00:30Z');
    queries = 0;
    expect((await recorder.lastHour(view, at)).filter((m) => m.state)).toEqual([]);
    await recorder.lastHour(view, at);
    expect(queries).toBe(1);
    // A row written: read again, and it shows.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(at);
    await recorder.tick();
    vi.useRealTimers();
    expect((await recorder.lastHour(view, at)).filter((m) => m.state).map((m) => m.lag)).toEqual([7]);
    expect(queries).toBe(2);
    // The next minute: read again.
    await recorder.lastHour(view, new Date('2026-11-27T14:01:01Z'));
    expect(queries).toBe(3);
  });
});
