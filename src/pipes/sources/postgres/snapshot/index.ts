/**
 * The snapshot: the exported snapshot held open while ranges read under it, the sessions ranges
 * read on, the ctid ranges tables are cut into, and the COPY relay each range is read with.
 */
export { copyOut, copyToFile } from './copy-out.js';
export { HeldSnapshot } from './held-snapshot.js';
export {
  copyRange,
  planRanges,
  rangeAt,
  type SnapshotRange,
  snapshotParallelism,
  type TableRanges,
} from './ranges.js';
export type { SnapshotSessions } from './snapshot-sessions.js';
