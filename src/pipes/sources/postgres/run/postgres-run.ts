import type pg from 'pg';
import { PermanentError, type RangeRead } from '../../../records/index.js';
import type { Batch, Claim, Json, RunContext, SourceStatus, WrittenTable } from '../../contract.js';
import { RecentWrites } from '../../messages/index.js';
import type { BatchSink } from '../../ports.js';
import {
  alignOwnedPublication,
  mappingRemoved,
  planOptions,
  readTable,
  type TablePlan,
  tableGone,
  tablePlan,
} from '../catalog/index.js';
import { type ChangeStream, openChangeStream, parseLsn } from '../changes/index.js';
import { closeClient, connect, type PostgresSource, waitEnded } from '../session/index.js';
import { HeldSnapshot, type SnapshotRange, snapshotParallelism } from '../snapshot/index.js';
import { dropFresh, emptyTarget, followSchema, freshName, swapIn } from '../target/index.js';
import { type BatchHost, readBatch } from './batch-read.js';
import type { PostgresRunCapabilities } from './capabilities.js';
import { claimChanges, claimRange } from './claims.js';
import { type ChangesRange, type Cursor, holdsOnlySnapshot } from './cursor.js';
import { restartKeylessSnapshots, twinsAsOne, twinsKeptAsOne } from './keyless-restart.js';
import { followMappings } from './mapping-changes.js';
import { setUpPipe } from './pipe-setup.js';
import { replicationStatus, tableStatuses } from './run-status.js';
import { SourceWatch } from './source-watch.js';

/** The states a run moves on from into Snapshot or Running (a retry may find it in either). */
/** The one batch of changes a run has in flight at a time, as RecentWrites names it. */
const CHANGES = 'changes';
const MOVES_ON_FROM = ['Provisioning', 'Setup', 'Snapshot', 'Degraded', 'Running', 'Resync'];

/** A pipe's run: setup, the snapshot's ranges, then changes (README, "How a PostgreSQL pipe runs"). */
export class PostgresRun implements PostgresRunCapabilities {
  readonly ownsState = true;
  readonly pollMs = 100;
  readonly completion = 'snapshot complete';
  firstCursor: Json | null = null;
  tables: readonly WrittenTable[];
  private cursor!: Cursor;
  private readonly snapshot: HeldSnapshot;
  private stream: ChangeStream | undefined;
  private readonly inFlightByTable = new Map<string, number>();
  private changesInFlight = 0;
  /** How long the last batches of changes took from claim to commit. */
  private readonly recentWrites = new RecentWrites();
  private readonly rowsDone = new Map<string, number>();
  private readonly watch: SourceWatch;
  private changesCommitted: { at: number; count: number }[] = [];
  /** Where the stream starts: the first open batch of changes (read again), else the cursor. */
  private resumeFrom: string | undefined;
  /** Targets of tables without a key an earlier Sluice made, which keep one of identical rows. */
  private collapsing: string[] = [];

  private constructor(
    private readonly context: RunContext,
    private readonly source: PostgresSource,
    private readonly plans: Map<string, TablePlan>,
    private readonly meta: pg.Client,
  ) {
    this.tables = [...plans.values()].map((plan) => plan.spec);
    this.snapshot = new HeldSnapshot(source, context);
    this.watch = new SourceWatch(context, source, meta);
  }

  static async open(context: RunContext): Promise<PostgresRun> {
    const source = context.config.source.postgres as PostgresSource;
    const meta = await connect(source, context);
    try {
      const plans = new Map<string, TablePlan>();
      const collapsing: string[] = [];
      for (const mapping of source.tableMappings) {
        const schema = mapping.sourceSchemaName ?? 'public';
        const table = await readTable(meta, schema, mapping.sourceTable);
        if (!table) throw tableGone(schema, mapping.sourceTable);
        const plan = tablePlan(mapping, table, planOptions(context));
        plans.set(mapping.targetTable, plan);
        if (await twinsAsOne(context.target, plan))
          collapsing.push(`${plan.spec.database}.${plan.spec.table}`);
        // Columns added at the source while the pipe was stopped join the target now.
        else await followSchema(context.target, plan);
      }
      const run = new PostgresRun(context, source, plans, meta);
      run.collapsing = collapsing;
      // A run that fails to begin lets go of what it opened: a stream holding the slot, a snapshot.
      await run.begin().catch(async (error: unknown) => {
        await run.close();
        throw error;
      });
      return run;
    } catch (error) {
      await closeClient(meta, context.logger);
      throw waitEnded(error) ?? error;
    }
  }

  get inFlight(): number {
    if (this.cursor.phase === 'cdc') return 1;
    return snapshotParallelism(this.source.settings).rangesAtOnce;
  }

  /**
   * Sets the pipe up on its first run and on a resync (publication, slot, snapshot plan); else
   * resumes, snapshotting the tables mapped while it was stopped.
   */
  private async begin(): Promise<void> {
    const { context, source } = this;
    const mode = source.settings?.replicationMode ?? 'cdc';
    const stored = (await context.progress.cursor()) as unknown as Cursor | null;
    // A resync's own cursor says so: after a crash it goes on with it rather than start again.
    const resyncing = (context.startedIn === 'Resync' && !stored?.resync) || stored?.resync?.setUp === false;
    if (this.collapsing.length > 0 && !resyncing && !stored?.resync) throw twinsKeptAsOne(this.collapsing);
    if (stored && !resyncing) {
      this.cursor = stored;
      const open = await context.progress.openBatches();
      for (const batch of open) {
        const range = batch.range as unknown as SnapshotRange | ChangesRange;
        if (range.kind === 'snapshot') this.adjust(range.table, 1);
        else {
          this.changesInFlight = 1;
          this.resumeFrom ??= range.from;
        }
      }
      if (this.cursor.phase === 'snapshot') {
        context.logger.info(
          { pipeId: context.pipeId },
          'resuming a snapshot after a restart: the ranges left are read as the tables are now, the changes since the slot was made follow',
        );
      }
      const beginning = await this.followMappings(mode, open);
      await this.restartKeylessSnapshots(beginning);
    } else {
      // A resync stays `Resync` until its new cursor is stored, so a retry still knows it is one.
      if (!resyncing)
        await context.setState('Setup', 'creating the publication and the replication slot', [
          'Provisioning',
          'Degraded',
        ]);
      // The resync is stored before the old slot goes: whatever fails after, a retry resyncs.
      const startedAt = resyncing ? (stored?.resync?.startedAt ?? (await this.engineNow())) : undefined;
      if (stored && startedAt !== undefined) {
        const asked = { ...stored, resync: { startedAt, setUp: false } } as unknown as Json;
        await context.progress.reset(asked);
      }
      const cursor = await this.setUp(mode);
      if (startedAt !== undefined) {
        if (mode === 'cdc_only') {
          // Nothing to snapshot: the targets start empty and follow the changes from now on.
          for (const plan of this.plans.values()) await emptyTarget(context.target, plan);
        } else {
          cursor.resync = { startedAt, setUp: true };
          for (const plan of this.plans.values()) await dropFresh(context.target, plan);
        }
      }
      this.cursor = cursor;
      if (stored) {
        await context.progress.reset(cursor as unknown as Json);
        await context.setState(
          'Setup',
          'resync: a new replication slot, then the snapshot into fresh tables',
          ['Resync'],
        );
      } else this.firstCursor = cursor as unknown as Json;
    }
    if (this.cursor.resync) this.writeFresh(true);
    if (this.cursor.phase === 'cdc') await this.startStreaming();
    else await context.setState('Snapshot', 'copying the tables', MOVES_ON_FROM);
    this.watch.start(
      () => this.cursor.slot,
      () => this.plans.values(),
      (plan) => holdsOnlySnapshot(this.cursor, plan, this.inFlightByTable),
    );
  }

  private async setUp(mode: string): Promise<Cursor> {
    const { context, source, meta, plans } = this;
    const set = await setUpPipe({ context, source, meta, plans }, mode);
    // One-off: no slot; the exported snapshot is what every range reads.
    if (set.exportSnapshot) await this.snapshot.export();
    if (set.created) this.snapshot.hold(set.created);
    return set.cursor;
  }

  /** Tables without a key mid-snapshot start it over (keyless-restart.ts). */
  private async restartKeylessSnapshots(beginning: ReadonlySet<string>): Promise<void> {
    const restart = await restartKeylessSnapshots({
      context: this.context,
      cursor: this.cursor,
      plans: this.plans,
      beginning,
      exported: async () => this.snapshot.seen ?? (await this.snapshot.export()),
    });
    if (!restart) return;
    for (const target of restart.restarted) this.inFlightByTable.delete(target);
    this.cursor = restart.cursor;
  }

  /**
   * Table mappings changed while the pipe was stopped (mapping-changes.ts): the cursor follows them.
   * Returns the tables whose snapshot begins now.
   */
  private async followMappings(mode: string, open: Batch[]): Promise<Set<string>> {
    const { context } = this;
    const { source, meta, plans, cursor: now } = this;
    const host = { context, source, meta, plans, cursor: now, exportSnapshot: () => this.snapshot.export() };
    const change = await followMappings(host, mode, open);
    if (!change) return new Set();
    for (const target of change.removed) this.inFlightByTable.delete(target);
    if (change.changesAgain) {
      this.changesInFlight = 0;
      this.resumeFrom = undefined;
    }
    this.cursor = change.cursor;
    const cursor = change.cursor as unknown as Json;
    await context.progress.reset(cursor, change.forget);
    context.logger.info(
      { pipeId: context.pipeId, added: change.added, removed: change.removed },
      'the table mappings changed while the pipe was stopped',
    );
    return new Set(change.added);
  }

  /** Points the plans at a resync's fresh tables (bad records still beside the targets), or back. */
  private writeFresh(fresh: boolean): void {
    for (const [target, plan] of this.plans) {
      const { errorsOf: _, ...spec } = plan.spec;
      this.plans.set(target, {
        ...plan,
        spec: fresh ? { ...spec, table: freshName(target), errorsOf: target } : { ...spec, table: target },
      });
    }
    this.tables = [...this.plans.values()].map((plan) => plan.spec);
  }

  private async startStreaming(): Promise<void> {
    await this.snapshot.release();
    await this.stream?.close();
    const { slot, publication } = this.cursor;
    if (!slot || !publication)
      throw new PermanentError('SLUICE_ERR_RESYNC_NEEDED', 'the pipe has no replication slot: resync it');
    await alignOwnedPublication(this.meta, this.source, publication, this.context.logger);
    this.stream = await this.openStream(slot, publication);
    await this.context.setState('Running', 'replicating changes', MOVES_ON_FROM);
  }

  /** A failure that a gone or invalidated slot explains fails the pipe, saying how to bring it back. */
  private async openStream(slot: string, publication: string): Promise<ChangeStream> {
    const settings = this.source.settings ?? {};
    try {
      return await openChangeStream(
        {
          source: this.source,
          slot,
          publication,
          from: parseLsn(this.resumeFrom ?? this.cursor.lsn),
          maxReadyChanges: Math.max(10_000, 2 * (settings.pullBatchSize ?? 100_000)),
          quiet: () => this.changesInFlight === 0,
          logger: this.context.logger,
        },
        this.context,
      );
    } catch (error) {
      throw await this.watch.streamFailure(slot, error);
    }
  }

  async next(cursorJson: Json | null): Promise<Claim | 'idle' | 'complete'> {
    this.watch.throwIfFailed();
    const stored = (cursorJson as unknown as Cursor | null) ?? this.cursor;
    // The stored cursor says 'snapshot' until the first batch of changes is claimed; once this run
    // streams, it is in changes whatever the store says (a second stream would find the slot busy).
    const cursor: Cursor = this.stream ? { ...stored, phase: 'cdc', resync: undefined } : stored;
    this.cursor = cursor;
    if (cursor.phase === 'snapshot') {
      const claim = this.nextRange(cursor);
      if (claim) return claim;
      if ([...this.inFlightByTable.values()].some((n) => n > 0)) return 'idle';
      if (cursor.resync) await this.swapInFresh(cursor.resync.startedAt);
      if ((this.source.settings?.replicationMode ?? 'cdc') === 'snapshot') return 'complete';
      await this.startStreaming();
      this.cursor = { ...cursor, phase: 'cdc', resync: undefined };
    }
    return this.nextChanges();
  }

  private nextRange(cursor: Cursor): Claim | undefined {
    const next = claimRange(cursor, this.source.settings ?? {}, this.inFlightByTable);
    if (next) this.adjust(next.table, 1);
    return next?.claim;
  }

  private nextChanges(): Claim | 'idle' {
    const stream = this.stream as ChangeStream;
    stream.throwIfFailed();
    if (this.changesInFlight > 0) return 'idle';
    const claim = claimChanges(stream, this.cursor, this.source.settings ?? {}, {
      recentWriteMs: this.recentWrites.longestMs,
      pollMs: this.pollMs,
    });
    if (claim === 'idle') return claim;
    this.changesInFlight += 1;
    this.recentWrites.claimed(CHANGES);
    return claim;
  }

  async read(batch: Batch, sink: BatchSink): Promise<RangeRead> {
    return readBatch(this.batchHost, batch, sink);
  }

  async committed(batch: Batch): Promise<void> {
    const range = batch.range as unknown as SnapshotRange | ChangesRange;
    if (range.kind === 'snapshot') {
      this.adjust(range.table, -1);
      this.rowsDone.set(range.table, (this.rowsDone.get(range.table) ?? 0) + batch.rows);
      return;
    }
    this.changesInFlight = 0;
    this.recentWrites.committed(CHANGES);
    this.stream?.confirm(parseLsn(range.to));
    this.changesCommitted.push({ at: Date.now(), count: range.changes });
  }

  /** Bytes of WAL the slot holds for the pipe, as last measured (source-watch.ts). */
  lag() {
    return this.watch.lag();
  }

  status(): SourceStatus {
    const cutoff = Date.now() - 60_000;
    this.changesCommitted = this.changesCommitted.filter((c) => c.at >= cutoff);
    const changes = this.changesCommitted.reduce((n, c) => n + c.count, 0);
    return {
      replication: replicationStatus(this.cursor, this.stream, this.watch.slot, changes / 60),
      tables: tableStatuses(this.plans, this.cursor.tables, this.inFlightByTable, this.rowsDone, (table) =>
        this.watch.rowsOf(table),
      ),
    };
  }

  async close(): Promise<void> {
    this.watch.stop();
    await this.stream?.close();
    await this.snapshot.release();
    await closeClient(this.meta, this.context.logger);
  }

  /** The resync's snapshot is done: its tables take the targets' place, and the cursor says so. */
  private async swapInFresh(startedAt: string): Promise<void> {
    for (const plan of this.plans.values()) await swapIn(this.context.target, plan, startedAt);
    this.writeFresh(false);
    const { resync: _, ...cursor } = this.cursor;
    this.cursor = cursor;
    const done = cursor as unknown as Json;
    await this.context.progress.reset(done, []);
    this.context.logger.info({ pipeId: this.context.pipeId }, 'resync done: the fresh tables are in place');
  }

  /** The engine's clock: the one `_pipe_synced_at` is written by (target/resync.ts tells tables apart by it). */
  private async engineNow(): Promise<string> {
    const result = await this.context.sourceReader.query('SELECT toString(now64(6)) AS at');
    return String(result.rows[0]?.at);
  }

  /** What reading a batch needs of this run (batch-read.ts). */
  private get batchHost(): BatchHost {
    return {
      context: this.context,
      source: this.source,
      sessions: this.snapshot.sessions,
      meta: this.meta,
      snapshotName: this.snapshot.name,
      stream: this.stream,
      planOf: (target) => this.planOf(target),
      seenBy: (target) => this.cursor.tables[target]?.seenBy,
      planBySource: (schema, table) => this.planBySource(schema, table),
      replace: (plan) => this.plans.set(plan.mapping.targetTable, plan),
    };
  }

  private adjust(table: string, by: number): void {
    this.inFlightByTable.set(table, (this.inFlightByTable.get(table) ?? 0) + by);
  }

  private planOf(target: string): TablePlan {
    const plan = this.plans.get(target);
    if (!plan) throw mappingRemoved(target);
    return plan;
  }

  private planBySource(schema: string, table: string): TablePlan | undefined {
    return [...this.plans.values()].find((p) => p.source.schema === schema && p.source.table === table);
  }
}
