/**
 * A pipe's run from beginning to end (postgres-run.ts drives it): setup of publication and slot,
 * the cursor and the claims of snapshot ranges and changes, reading a batch, mappings changed while
 * stopped, keyless snapshots started over, the watch on slot and tables, and `/status`.
 */
export { type BatchHost, readBatch } from './batch-read.js';
export { claimChanges, claimRange } from './claims.js';
export { type ChangesRange, type Cursor, holdsOnlySnapshot, type PartialLsn } from './cursor.js';
export { idleStatus } from './idle-status.js';
export { restartKeylessSnapshots, twinsAsOne, twinsKeptAsOne } from './keyless-restart.js';
export { followMappings } from './mapping-changes.js';
export { type CreatedSlot, dropOwned, setUpPipe } from './pipe-setup.js';
export { PostgresRun } from './postgres-run.js';
export { replicationStatus, tableStatuses } from './run-status.js';
export { SourceWatch } from './source-watch.js';
