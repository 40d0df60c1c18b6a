/**
 * Logical replication: the slot, pgoutput decoding, the stream of committed transactions, WAL
 * positions (LSN) and how far into a large transaction a batch goes, what a snapshot saw (the
 * changes it already holds), and a batch's changes as rows of its targets.
 */
export {
  copyTextLine,
  keyOf,
  rowsOfChanges,
  rowsText,
  type TableChanges,
  type TargetRow,
} from './change-rows.js';
export { type ChangeStream, openChangeStream, type Transaction } from './change-stream.js';
export { formatLsn, parseLsn } from './lsn.js';
export { type Relation, UNCHANGED } from './pgoutput.js';
export { cursorPosition, positionAfter, rangeFrom, rangeLabel, rangeTo, stored } from './positions.js';
export { exportSeenSnapshot, type SeenBy, sawTransaction } from './seen.js';
export { type SlotState, slotFix, slotProblem, slotState } from './slot.js';
