import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { sleep } from '../../../concurrency.js';
import type { Batch, Claim, Json } from '../../../store/index.js';
import { type BadRecord, PermanentError } from '../../records/index.js';
import type { RunContext, SourceRun, SourceStatus, WrittenTable } from '../contract.js';
import { readTable } from './catalog.js';
import { rowsOfChanges } from './changes.js';
import { closeClient, connect, type PostgresSource } from './connection.js';
import { TargetRowCounts } from './counts.js';
import { type ChangesRange, type Cursor, planOptions } from './cursor.js';
import { loadChanges, loadRowsFile } from './load.js';
import { formatLsn, parseLsn } from './lsn.js';
import type { Relation } from './pgoutput.js';
import { dropFresh, emptyTarget, freshName, swapIn } from './resync.js';
import { followSchema, shapeChanged } from './schema.js';
import {
  type CreatedSlot,
  createSlot,
  dropSlot,
  ensurePublication,
  ownedNames,
  slotLagBytes,
  slotPosition,
  tablesNotPublished,
} from './setup.js';
import { copyRange, planRanges, rangeAt, type SnapshotRange, type TableRanges } from './snapshot.js';
import { tableStatuses } from './status.js';
import { ChangeStream, type Transaction } from './stream.js';
import { type TablePlan, tablePlan } from './tables.js';

/** A pipe's run: setup, the snapshot's ranges, then batches of changes (README, "PostgreSQL pipes"). */
export class PostgresRun implements SourceRun {
  readonly ownsState = true;
  readonly pollMs = 100;
  readonly completion = 'snapshot complete';
  firstCursor: Json | null = null;
  tables: readonly WrittenTable[];
  private cursor!: Cursor;
  private snapshotName: string | null = null;
  private holder: pg.Client | null = null;
  private stream: ChangeStream | undefined;
  private readonly inFlightByTable = new Map<string, number>();
  private changesInFlight = 0;
  private changesClaimedAt = 0;
  /** How long the last batches of changes took from claim to commit (ms). */
  private recentWrites: number[] = [];
  private readonly rowsDone = new Map<string, number>();
  /** WAL bytes the slot is behind the server, as last measured. */
  private slotLag: number | null = null;
  private lagTimer: NodeJS.Timeout | undefined;
  private readonly counts: TargetRowCounts;
  private changesCommitted: { at: number; count: number }[] = [];
  /** Where the stream starts: the first open batch of changes (read again), else the cursor. */
  private resumeFrom: string | undefined;

  private constructor(
    private readonly context: RunContext,
    private readonly source: PostgresSource,
    private readonly plans: Map<string, TablePlan>,
    private readonly meta: pg.Client,
  ) {
    this.tables = [...plans.values()].map((plan) => plan.spec);
    this.counts = new TargetRowCounts(context.engine, context.logger.child({ pipeId: context.pipeId }));
  }

  static async open(context: RunContext): Promise<PostgresRun> {
    const source = context.config.source.postgres as PostgresSource;
    const meta = await connect(source, context);
    try {
      const plans = new Map<string, TablePlan>();
      for (const mapping of source.tableMappings) {
        const schema = mapping.sourceSchemaName ?? 'public';
        const table = await readTable(meta, schema, mapping.sourceTable);
        if (!table)
          throw new PermanentError(`the source table ${schema}.${mapping.sourceTable} does not exist`);
        const plan = tablePlan(mapping, table, planOptions(context));
        // Columns added at the source while the pipe was stopped join the target now.
        await followSchema(context.engine, plan);
        plans.set(mapping.targetTable, plan);
      }
      const run = new PostgresRun(context, source, plans, meta);
      // A run that fails to begin lets go of what it opened: a stream holding the slot, a snapshot.
      await run.begin().catch(async (error: unknown) => {
        await run.close();
        throw error;
      });
      return run;
    } catch (error) {
      await closeClient(meta, context.logger);
      throw error;
    }
  }

  get inFlight(): number {
    if (this.cursor.phase === 'cdc') return 1;
    const settings = this.source.settings ?? {};
    return (settings.initialLoadParallelism ?? 4) * (settings.snapshotNumberOfParallelTables ?? 1);
  }

  /**
   * Sets the pipe up on its first run and on a resync (publication, slot, snapshot plan); else
   * resumes, snapshotting the tables mapped while it was stopped.
   */
  private async begin(): Promise<void> {
    const { context, source } = this;
    const progress = await context.store.repos.progress.get(context.pipeId);
    const mode = source.settings?.replicationMode ?? 'cdc';
    const stored = (progress?.cursor ?? null) as unknown as Cursor | null;
    // A resync's own cursor says so: after a crash it goes on with it rather than start again.
    const resyncing = (context.startedIn === 'Resync' && !stored?.resync) || stored?.resync?.setUp === false;
    if (stored && !resyncing) {
      this.cursor = stored;
      const open = await context.store.repos.progress.openBatches(context.pipeId);
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
      await this.followMappings(mode, open);
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
        await context.store.transaction((repos) => repos.progress.reset(context.pipeId, asked));
      }
      const cursor = await this.setUp(mode);
      if (startedAt !== undefined) {
        if (mode === 'cdc_only') {
          // Nothing to snapshot: the targets start empty and follow the changes from now on.
          for (const plan of this.plans.values()) await emptyTarget(context.engine, plan);
        } else {
          cursor.resync = { startedAt, setUp: true };
          for (const plan of this.plans.values()) await dropFresh(context.engine, plan);
        }
      }
      this.cursor = cursor;
      if (stored) {
        await context.store.transaction((repos) =>
          repos.progress.reset(context.pipeId, cursor as unknown as Json),
        );
        await context.setState(
          'Setup',
          'resync: a new replication slot, then the snapshot into fresh tables',
          ['Resync'],
        );
      } else this.firstCursor = cursor as unknown as Json;
    }
    if (this.cursor.resync) this.writeFresh(true);
    if (this.cursor.phase === 'cdc') await this.startStreaming();
    else
      await context.setState('Snapshot', 'copying the tables', [
        'Provisioning',
        'Setup',
        'Degraded',
        'Snapshot',
        'Running',
        'Resync',
      ]);
    this.lagTimer = setInterval(() => void this.measure(), 10_000);
    void this.measure();
  }

  private async setUp(mode: string): Promise<Cursor> {
    const { context, source, meta } = this;
    const tables: Record<string, TableRanges> = {};
    const rowsPerRange = source.settings?.snapshotNumRowsPerPartition ?? 100_000;
    for (const [target, plan] of this.plans) tables[target] = planRanges(plan.source, rowsPerRange);
    const mapped = [...this.plans.keys()];
    if (mode === 'snapshot') {
      // One-off: no slot; the exported snapshot is what every range reads.
      await this.exportSnapshot();
      return { phase: 'snapshot', slot: null, publication: null, lsn: '0/0', tables, mapped };
    }
    const publication = await ensurePublication(meta, source, context.pipeId);
    const given = mode === 'cdc_only' ? source.settings?.replicationSlotName : undefined;
    const slot = given ?? ownedNames(context.pipeId).slot;
    const existing = await slotPosition(meta, slot);
    if (given && existing !== undefined) {
      return { phase: 'cdc', slot, publication, lsn: existing, tables: {}, mapped };
    }
    // A slot of ours without progress is a setup that did not finish: it starts again.
    if (existing !== undefined) await dropSlot(meta, slot);
    const created: CreatedSlot = await createSlot(source, context, slot, mode === 'cdc');
    this.holder = created.holder;
    this.snapshotName = created.snapshotName;
    if (mode === 'cdc_only')
      return { phase: 'cdc', slot, publication, lsn: created.consistentLsn, tables: {}, mapped };
    return { phase: 'snapshot', slot, publication, lsn: created.consistentLsn, tables, mapped };
  }

  /** A transaction held open exports a snapshot for the ranges to read under. */
  private async exportSnapshot(): Promise<void> {
    await this.releaseSnapshot();
    this.holder = await connect(this.source, this.context);
    await this.holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const exported = await this.holder.query<{ name: string }>('SELECT pg_export_snapshot() AS name');
    this.snapshotName = exported.rows[0]?.name ?? null;
  }

  /**
   * Table mappings changed while the pipe was stopped (README, "Changing the tables"): the
   * publication follows them; a removed table's changes are ignored from now on (its target
   * stays); an added table is snapshotted, after the publication covers it, at a snapshot taken
   * now, and then the changes go on from the last committed position. What both bring twice ends
   * as one row: a change's version is above every snapshot row's.
   */
  private async followMappings(mode: string, open: Batch[]): Promise<void> {
    const { context, source, meta } = this;
    const mapped = new Set(this.cursor.mapped);
    const added = [...this.plans.keys()].filter((target) => !mapped.has(target));
    const removed = this.cursor.mapped.filter((target) => !this.plans.has(target));
    if (added.length === 0 && removed.length === 0) return;
    const publication = this.cursor.publication;
    if (publication && source.settings?.publicationName) {
      const missing = await tablesNotPublished(meta, publication, source);
      if (missing.length > 0)
        throw new PermanentError(
          `the publication ${publication} does not cover ${missing.join(', ')}: add them to it (ALTER PUBLICATION ... ADD TABLE), then start the pipe`,
        );
    } else if (publication) await ensurePublication(meta, source, context.pipeId);
    const tables = { ...this.cursor.tables };
    for (const target of removed) delete tables[target];
    let { phase, lsn } = this.cursor;
    // Ranges of a removed table claimed before a crash are not read any more.
    const forget = open
      .filter((batch) => removed.includes((batch.range as unknown as SnapshotRange).table))
      .map((batch) => batch.seq);
    for (const target of removed) this.inFlightByTable.delete(target);
    if (added.length > 0 && mode !== 'cdc_only') {
      await this.exportSnapshot();
      const rowsPerRange = source.settings?.snapshotNumRowsPerPartition ?? 100_000;
      for (const target of added) tables[target] = planRanges(this.planOf(target).source, rowsPerRange);
      phase = 'snapshot';
      // A batch of changes in flight is read again once the snapshot is done.
      for (const batch of open) {
        const range = batch.range as unknown as SnapshotRange | ChangesRange;
        if (range.kind !== 'changes') continue;
        forget.push(batch.seq);
        lsn = range.from;
      }
      this.changesInFlight = 0;
      this.resumeFrom = undefined;
    }
    this.cursor = { ...this.cursor, phase, lsn, tables, mapped: [...this.plans.keys()] };
    const cursor = this.cursor as unknown as Json;
    await context.store.transaction((repos) => repos.progress.reset(context.pipeId, cursor, forget));
    context.logger.info(
      { pipeId: context.pipeId, added, removed },
      'the table mappings changed while the pipe was stopped',
    );
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
    await this.releaseSnapshot();
    await this.stream?.close();
    const { slot, publication } = this.cursor;
    if (!slot || !publication) throw new PermanentError('the pipe has no replication slot: resync it');
    const settings = this.source.settings ?? {};
    // The connection that made the slot (and held its snapshot) lets go of it as it closes.
    for (let attempt = 0; ; attempt += 1) {
      const stream = new ChangeStream({
        source: this.source,
        slot,
        publication,
        from: parseLsn(this.resumeFrom ?? this.cursor.lsn),
        maxReadyChanges: Math.max(10_000, 2 * (settings.pullBatchSize ?? 100_000)),
        quiet: () => this.changesInFlight === 0,
        logger: this.context.logger,
      });
      this.stream = stream;
      try {
        await stream.start(this.context);
        break;
      } catch (error) {
        await stream.close();
        if ((error as { code?: string }).code !== '55006' || attempt >= 40) throw error;
        await sleep(250, this.context.signal);
      }
    }
    await this.context.setState('Running', 'replicating changes', [
      'Provisioning',
      'Setup',
      'Snapshot',
      'Degraded',
      'Running',
      'Resync',
    ]);
  }

  async next(cursorJson: Json | null): Promise<Claim | 'idle' | 'complete'> {
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
    const settings = this.source.settings ?? {};
    const perTable = settings.initialLoadParallelism ?? 4;
    const tablesAtOnce = settings.snapshotNumberOfParallelTables ?? 1;
    const busy = [...this.inFlightByTable].filter(([, n]) => n > 0).map(([t]) => t);
    for (const [table, ranges] of Object.entries(cursor.tables)) {
      if (ranges.next >= ranges.ranges) continue;
      const active = busy.includes(table);
      if (!active && busy.length >= tablesAtOnce) continue;
      if ((this.inFlightByTable.get(table) ?? 0) >= perTable) continue;
      const range = rangeAt(table, ranges, ranges.next);
      this.adjust(table, 1);
      const tables = { ...cursor.tables, [table]: { ...ranges, next: ranges.next + 1 } };
      return {
        range: range as unknown as Json,
        files: 0,
        bytes: 0,
        skipped: [],
        cursor: { ...cursor, tables } as unknown as Json,
      };
    }
    return undefined;
  }

  private nextChanges(): Claim | 'idle' {
    const stream = this.stream as ChangeStream;
    stream.throwIfFailed();
    if (this.changesInFlight > 0) return 'idle';
    // What the store committed before the slot heard of it comes again after a restart: it is done.
    const done = parseLsn(this.cursor.lsn);
    while (stream.ready.length > 0 && (stream.ready[0] as Transaction).endLsn <= done) {
      stream.takeRange(done, (stream.ready[0] as Transaction).endLsn);
    }
    if (stream.ready.length === 0) return 'idle';
    const settings = this.source.settings ?? {};
    const limit = settings.pullBatchSize ?? 100_000;
    // syncIntervalSeconds bounds how long a change waits to be visible, so the batch is taken that
    // much earlier than the interval as recent batches took to write, plus one poll.
    const writeMs = Math.max(0, ...this.recentWrites);
    const waitMs = Math.max(0, (settings.syncIntervalSeconds ?? 60) * 1000 - writeMs - this.pollMs);
    const pending = stream.ready.reduce((n, t) => n + t.changes.length, 0);
    const oldest = (stream.ready[0] as Transaction).receivedAt;
    if (pending < limit && Date.now() - oldest < waitMs) return 'idle';
    let changes = 0;
    let bytes = 0;
    let last: Transaction | undefined;
    for (const transaction of stream.ready) {
      if (last && changes + transaction.changes.length > limit) break;
      changes += transaction.changes.length;
      bytes += transaction.bytes;
      last = transaction;
    }
    const range: ChangesRange = {
      kind: 'changes',
      from: this.cursor.lsn,
      to: formatLsn((last as Transaction).endLsn),
      changes,
    };
    this.changesInFlight += 1;
    this.changesClaimedAt = Date.now();
    return {
      range: range as unknown as Json,
      files: 0,
      bytes,
      skipped: [],
      cursor: { ...this.cursor, phase: 'cdc', lsn: range.to } as unknown as Json,
    };
  }

  async read(batch: Batch, _into: string, intoTable: (table: string) => string): Promise<BadRecord[]> {
    const range = batch.range as unknown as SnapshotRange | ChangesRange;
    const engines = { engine: this.context.engine, sourceReader: this.context.sourceReader };
    const name = `pg-${batch.pipeId}-${batch.slot}-${randomUUID()}`;
    const file = { name, path: this.context.engine.scratchPath(`${name}.tsv`), label: '' };
    try {
      if (range.kind === 'snapshot') {
        const plan = this.planOf(range.table);
        await copyRange(this.source, this.context, plan, range, this.snapshotName, file.path);
        const label = `${plan.source.schema}.${plan.source.table} range ${range.index}`;
        return await loadRowsFile(engines, plan, { ...file, label }, intoTable(plan.spec.table));
      }
      const stream = this.stream as ChangeStream;
      const to = parseLsn(range.to);
      await stream.waitFor(to, this.context.signal);
      const transactions = stream.takeRange(parseLsn(range.from), to);
      await this.followRelations(transactions, intoTable);
      const byTable = rowsOfChanges(transactions, (schema, table) => this.planBySource(schema, table));
      const bad: BadRecord[] = [];
      for (const changes of byTable.values()) {
        const label = `changes ${range.from}..${range.to} of ${changes.plan.source.schema}.${changes.plan.source.table}`;
        bad.push(
          ...(await loadChanges(
            engines,
            changes,
            { ...file, label },
            intoTable(changes.plan.spec.table),
            this.context.logger,
          )),
        );
      }
      return bad;
    } finally {
      await this.context.engine.removeScratch(`${name}.tsv`);
    }
  }

  async committed(batch: Batch): Promise<void> {
    const range = batch.range as unknown as SnapshotRange | ChangesRange;
    if (range.kind === 'snapshot') {
      this.adjust(range.table, -1);
      this.rowsDone.set(range.table, (this.rowsDone.get(range.table) ?? 0) + batch.rows);
      return;
    }
    this.changesInFlight = 0;
    // A batch read again after a restart was claimed by an earlier process: its time says nothing.
    if (this.changesClaimedAt > 0)
      this.recentWrites = [...this.recentWrites.slice(-19), Date.now() - this.changesClaimedAt];
    this.changesClaimedAt = 0;
    this.stream?.confirm(parseLsn(range.to));
    this.changesCommitted.push({ at: Date.now(), count: range.changes });
  }

  status(): SourceStatus {
    const cutoff = Date.now() - 60_000;
    this.changesCommitted = this.changesCommitted.filter((c) => c.at >= cutoff);
    const changes = this.changesCommitted.reduce((n, c) => n + c.count, 0);
    return {
      replication: {
        phase: this.cursor.phase === 'cdc' ? 'changes' : 'snapshot',
        slot: this.cursor.slot,
        publication: this.cursor.publication,
        lastReceivedLsn: this.stream ? formatLsn(this.stream.lastReceived) : null,
        lastCommittedLsn:
          this.cursor.phase === 'cdc'
            ? this.stream
              ? formatLsn(this.stream.confirmed)
              : this.cursor.lsn
            : null,
        slotLagBytes: this.slotLag,
        changesPerSecond: Math.round((changes / 60) * 10) / 10,
      },
      tables: tableStatuses(this.plans, this.cursor.tables, this.inFlightByTable, this.rowsDone, (table) =>
        this.counts.get(table),
      ),
    };
  }

  async close(): Promise<void> {
    clearInterval(this.lagTimer);
    await this.stream?.close();
    await this.releaseSnapshot();
    await closeClient(this.meta, this.context.logger);
  }

  /** The resync's snapshot is done: its tables take the targets' place, and the cursor says so. */
  private async swapInFresh(startedAt: string): Promise<void> {
    for (const plan of this.plans.values()) await swapIn(this.context.engine, plan, startedAt);
    this.writeFresh(false);
    const { resync: _, ...cursor } = this.cursor;
    this.cursor = cursor;
    const done = cursor as unknown as Json;
    await this.context.store.transaction((repos) => repos.progress.reset(this.context.pipeId, done, []));
    this.context.logger.info({ pipeId: this.context.pipeId }, 'resync done: the fresh tables are in place');
  }

  private async releaseSnapshot(): Promise<void> {
    const holder = this.holder;
    this.holder = null;
    this.snapshotName = null;
    if (holder) await closeClient(holder, this.context.logger);
  }

  /** The engine's clock: the one `_pipe_synced_at` is written by (resync.ts tells tables apart by it). */
  private async engineNow(): Promise<string> {
    const result = await this.context.sourceReader.query('SELECT toString(now64(6)) AS at');
    return String(result.rows[0]?.at);
  }

  /** The slot's lag and the targets' rows, for `/status` (counts.ts says how often it counts). */
  private async measure(): Promise<void> {
    await Promise.all([this.measureLag(), this.counts.refresh(this.plans.values())]);
  }

  private async measureLag(): Promise<void> {
    const slot = this.cursor?.slot;
    if (!slot) return;
    try {
      this.slotLag = await slotLagBytes(this.meta, slot);
    } catch (error) {
      this.context.logger.debug(
        { pipeId: this.context.pipeId, err: error },
        'could not measure the slot lag',
      );
    }
  }

  /**
   * Follows the source's schema before a batch of changes is written (README, "Schema changes"):
   * a relation message that names a new column or a new type makes the table's plan again from the
   * catalog, and the target (with the stage the batch writes into) gets the added columns.
   */
  private async followRelations(
    transactions: readonly Transaction[],
    intoTable: (table: string) => string,
  ): Promise<void> {
    const relations = new Map<number, Relation>();
    for (const transaction of transactions) {
      for (const change of transaction.changes) {
        for (const relation of change.kind === 'truncate' ? change.relations : [change.relation])
          relations.set(relation.oid, relation);
      }
    }
    for (const relation of relations.values()) {
      const plan = this.planBySource(relation.schema, relation.name);
      if (!plan || !shapeChanged(plan, relation)) continue;
      const table = await readTable(this.meta, plan.source.schema, plan.source.table);
      if (!table)
        throw new PermanentError(`the source table ${plan.source.schema}.${plan.source.table} was dropped`);
      const next = tablePlan(plan.mapping, table, planOptions(this.context));
      await followSchema(this.context.engine, next, [intoTable(plan.spec.table)]);
      this.plans.set(plan.mapping.targetTable, next);
      this.context.logger.info(
        { pipeId: this.context.pipeId, table: plan.mapping.targetTable },
        'the source table changed shape: the target follows it',
      );
    }
  }

  private adjust(table: string, by: number): void {
    this.inFlightByTable.set(table, (this.inFlightByTable.get(table) ?? 0) + by);
  }

  private planOf(target: string): TablePlan {
    const plan = this.plans.get(target);
    if (!plan)
      throw new PermanentError(`the table mapping for ${target} was removed while a batch for it was open`);
    return plan;
  }

  private planBySource(schema: string, table: string): TablePlan | undefined {
    for (const plan of this.plans.values()) {
      if (plan.source.schema === schema && plan.source.table === table) return plan;
    }
    return undefined;
  }
}
