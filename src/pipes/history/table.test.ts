import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedEngine } from '../../engine/index.js';
import { EVENTS, ensureHistory, MINUTES } from './table.js';

describe('the pipe history table and its per-minute view (chDB)', () => {
  let dir: string;
  let engine: EmbeddedEngine;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-history-'));
    engine = new EmbeddedEngine(join(dir, 'engine'), { confined: false });
  });
  afterAll(async () => {
    await engine.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('is made once for callers at the same moment (a first pipe asks from its stages and its first state row)', async () => {
    const fresh = new EmbeddedEngine(join(dir, 'fresh'), { confined: false });
    try {
      const statements: string[] = [];
      const counting = {
        query: (sql: string) => {
          statements.push(sql);
          return fresh.query(sql);
        },
        execute: (sql: string) => {
          statements.push(sql);
          return fresh.execute(sql);
        },
      };
      await ensureHistory(counting, 30);
      const once = statements.length;
      statements.length = 0;
      await fresh.execute('DROP DATABASE _sluice_history');
      await Promise.all([
        ensureHistory(counting, 30),
        ensureHistory(counting, 30),
        ensureHistory(counting, 30),
      ]);
      expect(statements).toHaveLength(once);
      expect((await fresh.query(`SELECT count() AS n FROM ${MINUTES}`)).rows).toEqual([{ n: 0 }]);
      // Once settled, the next call ensures again (an admin may have dropped them since).
      await ensureHistory(counting, 30);
      expect(statements).toHaveLength(2 * once);
    } finally {
      await fresh.close();
    }
  });

  it('reads per pipe and minute: sums, the largest lag, the last state and error code', async () => {
    await ensureHistory(engine, 30);
    await engine.execute(
      `INSERT INTO ${EVENTS} (at, pipe_id, pipe_name, kind, batch, rows, bytes, bad_records, lag, state, error_code) VALUES
       ('2026-11-27 10:00:05', 'p1', 'one', 'batch', 'b1', 100, 1000, 1, 50, 'Running', ''),
       ('2026-11-27 10:00:35', 'p1', 'one', 'batch', 'b2', 200, 2000, 0, 20, 'Running', ''),
       ('2026-11-27 10:00:50', 'p1', 'one', 'state', '', 0, 0, 0, NULL, 'Degraded', 'SLUICE_ERR_SOURCE_UNREACHABLE'),
       ('2026-11-27 10:02:10', 'p1', 'one', 'batch', 'b3', 7, 70, 0, 0, 'Running', ''),
       ('2026-11-27 10:00:10', 'p2', 'two', 'batch', 'b1', 5, 50, 0, NULL, 'Running', '')`,
    );
    const minutes = await engine.query(
      `SELECT toString(minute) AS minute, pipe_id, rows, batches, bad_records, lag, state, transitions, error_code
         FROM ${MINUTES} ORDER BY pipe_id, minute`,
    );
    expect(minutes.rows).toEqual([
      {
        minute: '2026-11-27 10:00:00',
        pipe_id: 'p1',
        rows: 300,
        batches: 2,
        bad_records: 1,
        lag: 50,
        state: 'Degraded',
        transitions: 1,
        error_code: 'SLUICE_ERR_SOURCE_UNREACHABLE',
      },
      {
        minute: '2026-11-27 10:02:00',
        pipe_id: 'p1',
        rows: 7,
        batches: 1,
        bad_records: 0,
        lag: 0,
        state: 'Running',
        transitions: 0,
        error_code: '',
      },
      {
        minute: '2026-11-27 10:00:00',
        pipe_id: 'p2',
        rows: 5,
        batches: 1,
        bad_records: 0,
        lag: null,
        state: 'Running',
        transitions: 0,
        error_code: '',
      },
    ]);
  });

  it("keeps a minute's error code when a batch follows the failure in it, and its largest lag per partition", async () => {
    await engine.execute(
      `INSERT INTO ${EVENTS} (at, pipe_id, pipe_name, kind, batch, rows, lag, lag_parts, state, error_code) VALUES
       ('2026-11-27 10:00:05', 'p3', 'three', 'batch', 'b1', 10, 50, {'t/0': 40, 't/1': 10}, 'Running', ''),
       ('2026-11-27 10:00:20', 'p3', 'three', 'state', '', 0, NULL, {}, 'Degraded', 'SLUICE_ERR_SOURCE_UNREACHABLE'),
       ('2026-11-27 10:00:40', 'p3', 'three', 'batch', 'b2', 10, 30, {'t/0': 5, 't/1': 25}, 'Running', '')`,
    );
    const [minute] = (
      await engine.query(`SELECT state, error_code, lag, lag_parts FROM ${MINUTES} WHERE pipe_id = 'p3'`)
    ).rows;
    expect(minute).toEqual({
      state: 'Running',
      error_code: 'SLUICE_ERR_SOURCE_UNREACHABLE',
      lag: 50,
      lag_parts: { 't/0': 40, 't/1': 25 },
    });
  });

  it('is made again when dropped, and a changed retention changes its TTL', async () => {
    await engine.execute(`DROP TABLE ${EVENTS}`);
    await engine.execute(`DROP VIEW ${MINUTES}`);
    const definition = async () => {
      const [table] = (
        await engine.query(
          "SELECT engine_full FROM system.tables WHERE database = '_sluice_history' AND name = 'pipe_events'",
        )
      ).rows;
      return String(table?.engine_full);
    };
    await ensureHistory(engine, 365);
    expect(await definition()).toContain('toIntervalDay(365)');
    await ensureHistory(engine, 7);
    expect(await definition()).toContain('toIntervalDay(7)');
    expect((await engine.query(`SELECT count() AS n FROM ${MINUTES}`)).rows).toEqual([{ n: 0 }]);
  });
});
