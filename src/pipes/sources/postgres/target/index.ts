/**
 * Writing into the engine: loading a range's or a batch's rows into its stage, the twins a
 * keyless table's deletes take, targets following the source's columns, a resync's fresh tables,
 * and the targets' live row counts.
 */
export { dropFresh, emptyTarget, freshName, swapIn } from './resync.js';
export { loadChanges, loadRowsFile } from './table-load.js';
export { type RowCount, TargetRowCounts } from './target-row-counts.js';
export { followRelations, followSchema, type RelationsHost } from './target-schema.js';
