import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Engine, tableName } from '../src/engine/index.js';
import type { PipeConfig } from '../src/pipes/model.js';
import { completeBatch, StagedCountError } from '../src/pipes/runtime/batch.js';
import { prepareDestinations } from '../src/pipes/runtime/destination.js';
import { StageEmptying } from '../src/pipes/runtime/stage-emptying.js';
import { createPipeWithoutFiles, sql } from './support/runtime.js';
import { startSluice, type TestSluice } from './support/sluice.js';

// The runtime holds what its stages hold against what the source says it read, before anything
// moves. A source whose count and load disagree stands in here for an engine that drops or adds
// rows (the reader below is a stand-in: it loads two rows and says three, or says what it loaded).

describe('a batch whose stage does not hold what was read is failed, not moved', () => {
  let s: TestSluice;
  let pipeId: string;
  beforeAll(async () => {
    s = await startSluice({ runtime: false });
    pipeId = await createPipeWithoutFiles(s, 'counted');
  });
  afterAll(async () => {
    await s?.close();
  });

  const service = () => ({ id: s.serviceId, organizationId: s.organizationId, kind: 'embedded' as const });
  const engineOf = () => s.sluice.engines.engineFor(service());
  const readerOf = () => s.sluice.engines.sourceReaderFor(service());
  const contextOf = (engine: Engine) => ({
    engine,
    sourceReader: readerOf(),
    store: s.sluice.store,
    emptying: new StageEmptying(engine, s.sluice.logger),
    logger: s.sluice.logger,
  });

  async function batchWith(rowsSaid: (loaded: number) => number, failpoint?: (step: string) => void) {
    const { store } = s.sluice;
    const engine = engineOf();
    const view = await s.sluice.pipes.runtimeView(pipeId);
    const destinations = await prepareDestinations(engine, view?.config as PipeConfig, undefined);
    await store.repos.progress.ensure(pipeId, null);
    const claimed = await store.transaction((repos) =>
      repos.progress.claim(pipeId, 0, { range: { n: 1 }, files: 1, bytes: 1, skipped: [], cursor: 'x' }),
    );
    return completeBatch(
      { ...contextOf(engine), ...(failpoint ? { failpoint } : {}) },
      destinations,
      claimed,
      async (_batch, sink) => {
        await engine.execute(`INSERT INTO ${sink.into()} (id) VALUES (1), (1)`);
        return { rows: rowsSaid(2), badRecords: [] };
      },
    );
  }

  it('a count that differs: StagedCountError naming both counts, nothing in the destination, the batch left unstaged', async () => {
    const failed = batchWith(() => 3);
    await expect(failed).rejects.toBeInstanceOf(StagedCountError);
    await expect(failed).rejects.toMatchObject({ code: 'SLUICE_ERR_STAGED_COUNT' });
    await expect(failed).rejects.toThrow(
      /read 3 rows and 0 bad records, but the engine staged 2 rows and 0 bad records in the pipe's staging tables \(`_sluice_staging`\.`[^`]+`, `_sluice_staging`\.`[^`]+`\)/,
    );
    // A service's admin can write into the stages: the message says so rather than blaming a defect alone.
    await expect(failed).rejects.toThrow(/something else wrote into or deleted from those tables/);
    expect(await sql(s, `SELECT count() AS n FROM ${tableName('counted', 'rows')}`)).toEqual([{ n: 0 }]);
    const open = await s.sluice.store.repos.progress.openBatches(pipeId);
    expect(open.map((b) => ({ staged: b.staged }))).toEqual([{ staged: false }]);
  });

  it('a count that agrees: moved and committed, counted by the engine', async () => {
    await s.sluice.store.transaction((repos) => repos.progress.reset(pipeId, null));
    const done = await batchWith((loaded) => loaded);
    expect(done).toMatchObject({ rows: 2, staged: true });
    expect(await sql(s, `SELECT count() AS n FROM ${tableName('counted', 'rows')}`)).toEqual([{ n: 2 }]);
    expect((await s.sluice.store.repos.progress.get(pipeId))?.rowsWritten).toBe(2);
  });

  it('a batch staged before its destination gained an index moves once its rows are in a stage made anew', async () => {
    const { store } = s.sluice;
    await store.transaction((repos) => repos.progress.reset(pipeId, null));
    await sql(s, 'TRUNCATE TABLE counted.rows');
    // Stopped right after staging, as a crash there would.
    await expect(
      batchWith(
        (loaded) => loaded,
        (step) => {
          if (step === 'staged') throw new Error('stopped after staging');
        },
      ),
    ).rejects.toThrow('stopped after staging');
    await sql(s, 'ALTER TABLE counted.rows ADD INDEX by_id id TYPE minmax GRANULARITY 1');
    const [open] = await store.repos.progress.openBatches(pipeId);
    expect(open).toMatchObject({ staged: true, rows: 2 });
    const engine = engineOf();
    const view = await s.sluice.pipes.runtimeView(pipeId);
    const destinations = await prepareDestinations(engine, view?.config as PipeConfig, undefined);
    const done = await completeBatch(
      contextOf(engine),
      destinations,
      open as NonNullable<typeof open>,
      async () => {
        throw new Error('a staged batch is not read again');
      },
    );
    expect(done).toMatchObject({ rows: 2 });
    expect(await sql(s, 'SELECT count() AS n FROM counted.rows')).toEqual([{ n: 2 }]);
  });
});
