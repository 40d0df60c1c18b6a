import { writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../src/engine/index.js';
import type { PipeConfig } from '../src/pipes/model.js';
import { type BatchContext, completeBatch, StagedCountError } from '../src/pipes/runtime/batch.js';
import { prepareDestinations } from '../src/pipes/runtime/destination.js';
import { batchEvent } from '../src/pipes/runtime/history-stage.js';
import { readyStages } from '../src/pipes/runtime/ready-stages.js';
import { StageEmptying } from '../src/pipes/runtime/stage-emptying.js';
import { stageNames, stageTable } from '../src/pipes/runtime/stages.js';
import { createPipeWithoutFiles, sql } from './support/runtime.js';
import { startSluice, type TestSluice } from './support/sluice.js';

// What a batch costs before its load (issue 39: at 1M rows a one-off pipe's fixed steps weighed as
// much as its load): stages made once, and not emptied before a read when they are known empty.
// After its moves a batch empties them (of the empty parts each move leaves behind), beside its
// commit. Each batch reads two rows through the service's real engine; the destination must hold
// every one, once.

describe("a batch's stages: made once, read into as they are, emptied after the moves", () => {
  let s: TestSluice;
  let pipeId: string;
  beforeAll(async () => {
    // No runtime: nothing but these batches makes the service's history tables.
    s = await startSluice({ runtime: false });
    pipeId = await createPipeWithoutFiles(s, 'once');
  });
  afterAll(async () => {
    await s?.close();
  });

  const service = () => ({ id: s.serviceId, organizationId: s.organizationId, kind: 'embedded' as const });

  /** The service's engine, every statement sent through it written down. */
  function recording(engine: Engine, seen: string[]): Engine {
    return new Proxy(engine, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property !== 'execute' && property !== 'query')
          return typeof value === 'function' ? value.bind(target) : value;
        return (text: string, options?: unknown) => {
          seen.push(text);
          return value.call(target, text, options);
        };
      },
    });
  }

  /** The pipe's engine, recording, and its destinations as a run prepares them. */
  async function recordedPipe() {
    const seen: string[] = [];
    const engine = recording(s.sluice.engines.engineFor(service()), seen);
    const view = await s.sluice.pipes.runtimeView(pipeId);
    const destinations = await prepareDestinations(engine, view?.config as PipeConfig, undefined);
    return { seen, engine, destinations };
  }

  /** A run's batch context, as runner.ts makes it: nothing checked or made yet. */
  const runContext = (engine: Engine): BatchContext => ({
    engine,
    sourceReader: s.sluice.engines.sourceReaderFor(service()),
    store: s.sluice.store,
    stagesChecked: new Map(),
    freshStages: new Set(),
    emptying: new StageEmptying(engine, s.sluice.logger),
    logger: s.sluice.logger,
  });

  const stagesMade = (seen: string[]) =>
    seen.filter((t) => t.startsWith('CREATE TABLE `_sluice_staging`')).length;
  const stagesEmptied = (seen: string[]) =>
    seen.filter((t) => t.startsWith('TRUNCATE TABLE `_sluice_staging`')).length;
  /** Whether every TRUNCATE of a stage came after the batch's read and its last move. */
  const emptiedAfterMoves = (seen: string[]) => {
    const last = (prefix: string) => seen.findLastIndex((t) => t.startsWith(prefix));
    const firstEmptied = seen.findIndex((t) => t.startsWith('TRUNCATE TABLE `_sluice_staging`'));
    return (
      firstEmptied > last('INSERT INTO `_sluice_staging`') &&
      firstEmptied > last('ALTER TABLE `_sluice_staging`')
    );
  };
  /** The active parts, empty ones too, of a slot's stages. */
  const stageParts = (slot: number) =>
    sql(
      s,
      `SELECT count() AS n FROM system.parts WHERE database = '_sluice_staging' AND active AND table LIKE '%${pipeId.replace(/-/g, '')}_${slot}%'`,
    );

  it("makes a service's first batch's stages once (its history table made with them) and reads into them unemptied, as the next batch does after the last one's moves and emptying", async () => {
    const { store } = s.sluice;
    const { seen, engine, destinations } = await recordedPipe();
    await store.repos.progress.ensure(pipeId, null);
    const context: BatchContext = {
      ...runContext(engine),
      history: {
        days: 30,
        event: (b, staged) =>
          batchEvent({ pipeId, pipeName: 'once', state: 'Running' }, undefined, b, staged),
      },
    };
    const batch = async (n: number) => {
      const claimed = await store.transaction((repos) =>
        repos.progress.claim(pipeId, 0, { range: { n }, files: 1, bytes: 1, skipped: [], cursor: `k${n}` }),
      );
      const done = await completeBatch(context, destinations, claimed, async (_b, sink) => {
        await engine.execute(`INSERT INTO ${sink.into()} (id) VALUES (${n}), (${n})`);
        return { rows: 2, badRecords: [] };
      });
      // The stages are emptied after the commit, in the background: settled before they are looked at.
      await context.emptying.settleAll();
      return done;
    };

    // As the runner does for slot 0 beside the first claim: the history's tables do not exist yet.
    expect(await sql(s, "SELECT count() AS n FROM system.tables WHERE database = '_sluice_history'")).toEqual(
      [{ n: 0 }],
    );
    await readyStages(context, destinations, { pipeId, slot: 0, staged: false });
    expect(await batch(1)).toMatchObject({ rows: 2, staged: true });
    // Data, errors and history: each made once, not emptied before the read (they were made
    // empty); data and history, which parts moved out of, emptied after the moves (errors held
    // nothing): not even an empty part is left in them.
    expect(stagesMade(seen)).toBe(3);
    expect(stagesEmptied(seen)).toBe(2);
    expect(emptiedAfterMoves(seen)).toBe(true);
    expect(await stageParts(0)).toEqual([{ n: 0 }]);

    // The next batch reads into them as they are, and empties them after its moves.
    seen.length = 0;
    expect(await batch(2)).toMatchObject({ rows: 2, staged: true });
    expect(stagesMade(seen)).toBe(0);
    expect(stagesEmptied(seen)).toBe(2);
    expect(emptiedAfterMoves(seen)).toBe(true);
    expect(await stageParts(0)).toEqual([{ n: 0 }]);

    // A row in a stage all the same is never taken as the batch's own: its count check fails it,
    // nothing of it moved; read again, the batch empties the stages first and lands once.
    const stage = stageTable(stageNames(pipeId, 0).data);
    await engine.execute(`INSERT INTO ${stage} (id) VALUES (99)`);
    const third = await store.transaction((repos) =>
      repos.progress.claim(pipeId, 0, { range: { n: 3 }, files: 1, bytes: 1, skipped: [], cursor: 'k3' }),
    );
    const readThird = async (_b: unknown, sink: { into(): string }) => {
      await engine.execute(`INSERT INTO ${sink.into()} (id) VALUES (3), (3)`);
      return { rows: 2, badRecords: [] };
    };
    await expect(completeBatch(context, destinations, third, readThird)).rejects.toThrow(StagedCountError);
    expect(await sql(s, 'SELECT count() AS n FROM once.rows WHERE id IN (3, 99)')).toEqual([{ n: 0 }]);
    seen.length = 0;
    expect(await completeBatch(context, destinations, third, readThird)).toMatchObject({ rows: 2 });
    await context.emptying.settleAll();
    // Emptied before the read (the failed read's rows), all three, and after the moves.
    expect(stagesEmptied(seen)).toBe(5);
    expect(await sql(s, 'SELECT id, count() AS n FROM once.rows GROUP BY id ORDER BY id')).toEqual([
      { id: 1, n: 2 },
      { id: 2, n: 2 },
      { id: 3, n: 2 },
    ]);
    expect(await sql(s, 'SELECT sum(rows) AS n FROM _sluice_history.pipe_events')).toEqual([{ n: 6 }]);
  });
  it("ensures the history's table and view once while they are as this process left them, and again once an admin changed them", async () => {
    const { seen, engine, destinations } = await recordedPipe();
    // A new run of the pipe each time (its own context), as a one-off pipe's every run is.
    const ready = (slot: number) =>
      readyStages(
        {
          engine,
          stagesChecked: new Map(),
          freshStages: new Set(),
          history: { days: 30, event: () => ({}) as never },
        },
        destinations,
        { pipeId, slot, staged: false },
      );
    const historyEnsured = () => seen.filter((t) => t.includes('VIEW `_sluice_history`')).length;
    await ready(1);
    await ready(2);
    // The first run of this engine object ensures them; the second finds them as they were left.
    expect(historyEnsured()).toBe(1);
    await sql(s, 'CREATE OR REPLACE VIEW _sluice_history.pipe_minutes AS SELECT 1 AS minute');
    seen.length = 0;
    await ready(3);
    expect(historyEnsured()).toBe(1);
    expect(
      await sql(
        s,
        "SELECT count() AS n FROM system.columns WHERE database = '_sluice_history' AND table = 'pipe_minutes' AND name = 'lag_parts'",
      ),
    ).toEqual([{ n: 1 }]);
    seen.length = 0;
    await ready(4);
    expect(historyEnsured()).toBe(0);
  });
  it("counts a stage the engine loaded a stream's text into once: the load's own count is the batch's", async () => {
    const { store } = s.sluice;
    const { seen, engine, destinations } = await recordedPipe();
    const context = runContext(engine);
    const stage = stageTable(stageNames(pipeId, 6).data);
    const stageCounts = () => seen.filter((t) => t === `SELECT count() AS n FROM ${stage}`).length;
    await readyStages(context, destinations, { pipeId, slot: 6, staged: false });
    const run = async (n: number, written: number) => {
      seen.length = 0;
      let refusedLoad = false;
      const claimed = await store.transaction((repos) =>
        repos.progress.claim(pipeId, 6, { range: { n }, files: 1, bytes: 1, skipped: [], cursor: `t${n}` }),
      );
      const done = await completeBatch(context, destinations, claimed, async (_b, sink) => {
        const file = `text-${n}.json`;
        await writeFile(sink.scratch.path(file), `{"id":${n}}\n{"id":${n}}\n`);
        // As a stream's batch does (sources/messages/json-load.ts): the lines it wrote, counted.
        const { refused } = await sink.loadText({
          columnList: '(`id`)',
          file,
          format: 'JSONEachRow',
          settings: {},
          rows: written,
        });
        await sink.scratch.remove(file);
        refusedLoad = refused !== undefined;
        if (refused) await engine.execute(`INSERT INTO ${sink.into()} (id) VALUES (${n}), (${n})`);
        return { rows: 2, badRecords: [] };
      });
      await context.emptying.settleAll();
      return { rows: done.rows, refused: refusedLoad };
    };
    expect(await run(20, 2)).toEqual({ rows: 2, refused: false });
    expect(stageCounts()).toBe(1);
    // A load whose count the engine did not meet is refused: the stage emptied, loaded again
    // another way, and counted again by the batch.
    expect(await run(21, 3)).toEqual({ rows: 2, refused: true });
    expect(stageCounts()).toBe(2);
    expect(
      await sql(s, 'SELECT id, count() AS n FROM once.rows WHERE id IN (20, 21) GROUP BY id ORDER BY id'),
    ).toEqual([
      { id: 20, n: 2 },
      { id: 21, n: 2 },
    ]);
  });
  it("checks a slot's stages again for its first batch unless the run checked them a moment before", async () => {
    const { store } = s.sluice;
    const { seen, engine, destinations } = await recordedPipe();
    const shapeChecks = () => seen.filter((t) => t.includes('FROM system.columns')).length;
    const run = async (n: number, checkedAgo: number, checkedFor = destinations) => {
      const context: BatchContext = { ...runContext(engine), stagesCheckedAt: new Map() };
      await readyStages(context, destinations, { pipeId, slot: 5, staged: false });
      context.stagesCheckedAt?.set(5, { at: performance.now() - checkedAgo, destinations: checkedFor });
      seen.length = 0;
      const claimed = await store.transaction((repos) =>
        repos.progress.claim(pipeId, 5, { range: { n }, files: 1, bytes: 1, skipped: [], cursor: `j${n}` }),
      );
      await completeBatch(context, destinations, claimed, async (_b, sink) => {
        await engine.execute(`INSERT INTO ${sink.into()} (id) VALUES (${n})`);
        return { rows: 1, badRecords: [] };
      });
      return shapeChecks();
    };
    expect(await run(10, 0)).toBe(0);
    expect(await run(11, 5000)).toBe(1);
    // Destinations the source changed since the check (a database pipe's): checked again.
    expect(await run(12, 0, [...destinations])).toBe(1);
    expect(await sql(s, 'SELECT count() AS n FROM once.rows WHERE id IN (10, 11, 12)')).toEqual([{ n: 3 }]);
  });
});
