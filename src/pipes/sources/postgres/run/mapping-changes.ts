import type pg from 'pg';
import { PermanentError } from '../../../records/index.js';
import type { Batch, RunContext } from '../../contract.js';
import type { TablePlan } from '../catalog/index.js';
import {
  ensurePublication,
  mappedTableProblems,
  publicationProblem,
  unpublishable,
} from '../catalog/index.js';
import type { SeenBy } from '../changes/index.js';
import type { PostgresSource } from '../session/index.js';
import { planRanges, type SnapshotRange } from '../snapshot/index.js';
import type { ChangesRange, Cursor } from './cursor.js';

/** A run as it resumes, for following the table mappings changed while it was stopped. */
export interface MappingsHost {
  context: RunContext;
  source: PostgresSource;
  meta: pg.Client;
  cursor: Cursor;
  plans: ReadonlyMap<string, TablePlan>;
  /** Holds a snapshot open for the added tables' ranges to read under; says what it saw. */
  exportSnapshot(): Promise<SeenBy>;
}

/** What changed: the cursor to store, the open batches to forget, and what the run must let go. */
export interface MappingsChange {
  cursor: Cursor;
  forget: number[];
  added: string[];
  removed: string[];
  /** A batch of changes in flight is read again once the added tables' snapshot is done. */
  changesAgain: boolean;
}

/**
 * Table mappings changed while the pipe was stopped (README, "How a PostgreSQL pipe runs",
 * Commands): the publication follows them; a removed table's changes are ignored from now on (its target
 * stays); an added table is snapshotted, after the publication covers it, at a snapshot taken
 * now, and then the changes go on from the last committed position. What both bring twice ends
 * as one row: a change's version is above every snapshot row's. A table without a key has no
 * key to end twice as one: its changes skip the transactions the snapshot saw (changes/seen.ts).
 * Undefined when nothing changed.
 */
export async function followMappings(
  host: MappingsHost,
  mode: string,
  open: readonly Batch[],
): Promise<MappingsChange | undefined> {
  const { context, source, meta, cursor, plans } = host;
  const mapped = new Set(cursor.mapped);
  const added = [...plans.keys()].filter((target) => !mapped.has(target));
  const removed = cursor.mapped.filter((target) => !plans.has(target));
  if (added.length === 0 && removed.length === 0) return undefined;
  const publication = cursor.publication;
  // The create checks of the tables, against the mappings as they are now.
  const problems = mappedTableProblems(
    source.tableMappings.map((m) => plans.get(m.targetTable)?.source),
    source,
    mode,
  ).map((p) => `${p.path}: ${p.message}`);
  if (publication) {
    for (const { field, message } of await unpublishable(meta, source))
      problems.push(`source.postgres.${field}: ${message}`);
  }
  if (problems.length > 0)
    throw new PermanentError('SLUICE_ERR_SOURCE_SETUP', `${problems.join('; ')}; then start the pipe`);
  if (publication && source.settings?.publicationName) {
    const problem = await publicationProblem(meta, publication, source);
    if (problem) throw new PermanentError('SLUICE_ERR_SOURCE_SETUP', `${problem}, then start the pipe`);
  } else if (publication) await ensurePublication(meta, source, context.pipeId);
  const tables = { ...cursor.tables };
  for (const target of removed) delete tables[target];
  let { phase, lsn, partial } = cursor;
  // Ranges of a removed table claimed before a crash are not read any more.
  const forget = open
    .filter((batch) => removed.includes((batch.range as unknown as SnapshotRange).table))
    .map((batch) => batch.seq);
  let changesAgain = false;
  if (added.length > 0 && mode !== 'cdc_only') {
    const seenBy = await host.exportSnapshot();
    const rowsPerRange = source.settings?.snapshotNumRowsPerPartition ?? 100_000;
    for (const target of added) {
      const plan = plans.get(target) as TablePlan;
      tables[target] = { ...planRanges(plan.source, rowsPerRange), ...(plan.keyless ? { seenBy } : {}) };
    }
    phase = 'snapshot';
    for (const batch of open) {
      const range = batch.range as unknown as SnapshotRange | ChangesRange;
      if (range.kind !== 'changes') continue;
      if (batch.staged) {
        // Staged, and maybe moved in part: it finishes its moves, and the changes go on after it
        // (a table without a key would take other twins for its deletes if it were read again).
        lsn = range.to;
        partial = range.toPartial;
        continue;
      }
      forget.push(batch.seq);
      lsn = range.from;
      partial = range.fromPartial;
      changesAgain = true;
    }
  }
  return {
    cursor: { ...cursor, phase, lsn, partial, tables, mapped: [...plans.keys()] },
    forget,
    added,
    removed,
    changesAgain,
  };
}
