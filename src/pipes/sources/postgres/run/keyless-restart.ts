import { literal, tableName } from '../../../../engine/index.js';
import { errorTableName, PermanentError } from '../../../records/index.js';
import type { Json, RunContext } from '../../contract.js';
import type { TargetTables } from '../../ports.js';
import { ROW_ID, type TablePlan } from '../catalog/index.js';
import type { SeenBy } from '../changes/index.js';
import type { SnapshotRange } from '../snapshot/index.js';
import { freshName } from '../target/index.js';
import type { Cursor } from './cursor.js';

/** What starting the snapshots of tables without a key over changed: the cursor (stored), the tables. */
export interface KeylessRestart {
  cursor: Cursor;
  restarted: string[];
}

/**
 * A snapshot resumed after a restart reads the ranges left as the tables are now, and the changes
 * since the slot was made follow: for a table with a key, what both bring ends as one row. A
 * table without a key has no key to end as one, so its snapshot, unless finished, starts over:
 * its target is emptied, every range is read again under one snapshot exported now (`seenBy`
 * says what it saw), and its changes skip the transactions that snapshot saw (changes/seen.ts), so each
 * row of the source is one row of the target. The cursor is stored, the ranges in flight of those
 * tables forgotten. Undefined when no such table is mid-snapshot.
 */
export async function restartKeylessSnapshots(host: {
  context: RunContext;
  cursor: Cursor;
  plans: ReadonlyMap<string, TablePlan>;
  /** The snapshot this run exported (the tables mapped while stopped read under it), or a new one. */
  exported(): Promise<SeenBy>;
  /** Tables whose snapshot begins in this run, under the snapshot it exported (mapped while stopped). */
  beginning: ReadonlySet<string>;
}): Promise<KeylessRestart | undefined> {
  const { context, cursor, plans } = host;
  if (cursor.phase !== 'snapshot') return undefined;
  const open = await context.progress.openBatches();
  const openRanges = open.filter((b) => (b.range as unknown as SnapshotRange).kind === 'snapshot');
  const restarting = [...plans.values()].filter((plan) => {
    const target = plan.mapping.targetTable;
    const ranges = cursor.tables[target];
    if (!plan.keyless || !ranges || host.beginning.has(target)) return false;
    const inFlight = openRanges.some((b) => (b.range as unknown as SnapshotRange).table === target);
    return ranges.next < ranges.ranges || inFlight;
  });
  if (restarting.length === 0) return undefined;
  const seenBy = await host.exported();
  const tables = { ...cursor.tables };
  for (const plan of restarting) {
    const target = plan.mapping.targetTable;
    tables[target] = { ...(tables[target] as NonNullable<(typeof tables)[string]>), next: 0, seenBy };
    const written = cursor.resync ? freshName(target) : target;
    const { database } = plan.spec;
    await context.target.execute(`TRUNCATE TABLE IF EXISTS ${tableName(database, written)}`);
    // The bad records of the attempt given up are read again with their ranges (a resync's sit
    // beside those of the target it replaces, which stay).
    if (!cursor.resync && (await context.target.describe(database, errorTableName(target)))) {
      await context.target.execute(
        `DELETE FROM ${tableName(database, errorTableName(target))} WHERE pipe_id = ${literal(context.pipeId)}`,
      );
    }
  }
  const names = new Set(restarting.map((plan) => plan.mapping.targetTable));
  const forget = openRanges
    .filter((b) => names.has((b.range as unknown as SnapshotRange).table))
    .map((b) => b.seq);
  const restarted = { ...cursor, tables };
  const stored = restarted as unknown as Json;
  await context.progress.reset(stored, forget);
  context.logger.info(
    { pipeId: context.pipeId, tables: [...names] },
    'the snapshot of tables without a key starts over after a restart, under one snapshot, so that identical rows are neither lost nor doubled',
  );
  return { cursor: restarted, restarted: [...names] };
}

/**
 * Whether a table without a key has a target an earlier Sluice made, ordered by every column,
 * which keeps one row of identical rows: it cannot become a row-for-row mirror in place. One that
 * holds nothing is dropped, to be made anew.
 */
export async function twinsAsOne(tables: TargetTables, plan: TablePlan): Promise<boolean> {
  if (!plan.keyless) return false;
  const { database, table } = plan.spec;
  const storage = await tables.storage(database, table);
  if (!storage?.engine.endsWith('MergeTree')) return false;
  if (new RegExp(`\\b${ROW_ID}\\b`).test(storage.clauses['ORDER BY'] ?? '')) return false;
  if ((await tables.countRows(database, table)) > 0) return true;
  await tables.execute(`DROP TABLE ${tableName(database, table)}`);
  return false;
}

/** The failure of a pipe whose targets keep one of identical rows (twinsAsOne): resync it. */
export function twinsKeptAsOne(targets: readonly string[]): PermanentError {
  return new PermanentError(
    'SLUICE_ERR_RESYNC_NEEDED',
    `${targets.join(', ')}: made by an earlier Sluice for a table without a key, it keeps one row of identical rows; resync the pipe (PATCH .../state {"command": "resync"}) to mirror every row (README, "Upgrading")`,
  );
}
