import { randomUUID } from 'node:crypto';
import { type RangeRead, rangeRead } from '../../../records/index.js';
import type { Batch, RunContext } from '../../contract.js';
import type { BatchSink } from '../../ports.js';
import type { TablePlan } from '../catalog/index.js';
import type { ChangeStream } from '../changes/index.js';
import {
  rangeFrom,
  rangeLabel,
  rangeTo,
  rowsOfChanges,
  type SeenBy,
  sawTransaction,
} from '../changes/index.js';
import type { PostgresSource } from '../session/index.js';
import type { SnapshotSessions } from '../snapshot/index.js';
import { copyRange, type SnapshotRange, snapshotParallelism } from '../snapshot/index.js';
import { followRelations, loadChanges, loadRowsFile, type RelationsHost } from '../target/index.js';
import type { ChangesRange } from './cursor.js';

/** What reading a batch needs of its run. */
export interface BatchHost extends RelationsHost {
  source: PostgresSource;
  context: RunContext;
  /** The sessions snapshot ranges read on. */
  sessions: SnapshotSessions;
  /** The exported snapshot the snapshot's ranges read under (null: the slot's own is gone). */
  snapshotName: string | null;
  stream: ChangeStream | undefined;
  planOf(target: string): TablePlan;
  /** What the snapshot a table was read under saw, when it was not the slot's (changes/seen.ts). */
  seenBy(target: string): SeenBy | undefined;
}

/**
 * Reads a batch into its sink (its tables' stages): a snapshot range copied under the exported snapshot
 * (`COPY ... TO STDOUT` into a scratch file the engine parses), or the committed transactions of
 * a range of changes, after the targets followed the source's schema.
 */
export async function readBatch(host: BatchHost, batch: Batch, sink: BatchSink): Promise<RangeRead> {
  const { context } = host;
  const { logger } = context;
  const range = batch.range as unknown as SnapshotRange | ChangesRange;
  const into = { sink, tables: context.target };
  const name = `pg-${batch.pipeId}-${batch.slot}-${randomUUID()}`;
  const file = { name, file: `${name}.tsv`, path: sink.scratch.path(`${name}.tsv`), label: '' };
  if (range.kind === 'snapshot') {
    // The text file of an earlier range, written over (records/scratch-text.ts), kept again once done.
    const reused = await sink.scratch.reuse(file.file);
    let read: RangeRead;
    try {
      const plan = host.planOf(range.table);
      const rows = await copyRange(host.sessions, plan, range, host.snapshotName, { ...file, reused });
      const label = `${plan.source.schema}.${plan.source.table} range ${range.index}`;
      const { rangesAtOnce } = snapshotParallelism(host.source.settings);
      read = await loadRowsFile(into, plan, { ...file, label, rows }, { logger, rangesAtOnce });
    } catch (error) {
      await sink.scratch.remove(file.file);
      throw error;
    }
    await sink.scratch.keep(file.file);
    return read;
  }
  try {
    const stream = host.stream as ChangeStream;
    const [from, to] = [rangeFrom(range), rangeTo(range)];
    await stream.waitFor(from, to, context.signal);
    const transactions = stream.takeRange(from, to);
    await followRelations(host, transactions, (table) => sink.into(table));
    const byTable = rowsOfChanges(
      transactions,
      (schema, table) => host.planBySource(schema, table),
      (plan, transaction) => {
        const seen = host.seenBy(plan.mapping.targetTable);
        return seen !== undefined && sawTransaction(seen, transaction);
      },
    );
    const reads: RangeRead[] = [];
    for (const changes of byTable.values()) {
      const { schema, table } = changes.plan.source;
      const label = `${rangeLabel(range)} of ${schema}.${table}`;
      reads.push(await loadChanges(into, changes, { ...file, label }, { logger }));
    }
    return rangeRead(reads);
  } finally {
    await sink.scratch.remove(`${name}.tsv`);
  }
}
