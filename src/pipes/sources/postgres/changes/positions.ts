import type { ChangesRange, Cursor, PartialLsn } from '../run/index.js';
import type { Transaction } from './change-stream.js';
import { formatLsn, parseLsn } from './lsn.js';

/**
 * How far changes go: every transaction whose commit ends at or before `lsn`, and, of a large
 * transaction being read in pieces (its commit at `partial.txn`), the changes up to
 * `partial.through`. `lsn` is always a whole transaction's end: the slot is confirmed and a
 * stream started there only, so a transaction cut in pieces comes again whole after a restart,
 * and what of it was committed is left out by its changes' positions.
 */
export interface Position {
  lsn: bigint;
  partial?: { txn: bigint; through: bigint };
}

/** Whether all of `item` is at or before `at`. */
export function isWithin(item: Transaction, at: Position): boolean {
  if (item.through === undefined) return item.endLsn <= at.lsn;
  // No whole transaction ends between a transaction's commit start and its end.
  if (item.finalLsn < at.lsn) return true;
  return at.partial?.txn === item.finalLsn && item.through <= at.partial.through;
}

/** The part of `item` after `from`: nothing when `from` passed it, its later changes when `from` is inside it. */
export function partAfter(item: Transaction, from: Position): Transaction | undefined {
  if (isWithin(item, from)) return undefined;
  const partial = from.partial;
  if (!partial || item.finalLsn !== partial.txn) return item;
  return { ...item, changes: item.changes.filter((change) => change.lsn > partial.through) };
}

/** `item` cut at `to`: the part at or before it, and the rest (each undefined when empty). */
export function splitAt(item: Transaction, to: Position): [Transaction | undefined, Transaction | undefined] {
  if (isWithin(item, to)) return [item, undefined];
  const partial = to.partial;
  if (!partial || item.finalLsn !== partial.txn) return [undefined, item];
  const head = item.changes.filter((change) => change.lsn <= partial.through);
  if (head.length === 0) return [undefined, item];
  const rest = item.changes.slice(head.length);
  // The bytes (which feed the rates alone) shared in proportion to the changes.
  const headBytes = Math.round((item.bytes * head.length) / item.changes.length);
  return [
    { ...item, changes: head, through: partial.through, bytes: headBytes },
    { ...item, changes: rest, bytes: item.bytes - headBytes },
  ];
}

/** Whether `item` reaches `to`: once it is read, everything up to `to` has been. */
export function reaches(item: Transaction, to: Position): boolean {
  const partial = to.partial;
  if (partial) {
    if (item.finalLsn !== partial.txn) return item.finalLsn > partial.txn;
    return item.through === undefined || item.through >= partial.through;
  }
  return item.through === undefined ? item.endLsn >= to.lsn : item.finalLsn >= to.lsn;
}

/** Where `items`, read in order after `from`, end. */
export function positionAfter(from: Position, items: readonly Transaction[]): Position {
  let at = from;
  for (const item of items) {
    at =
      item.through === undefined
        ? { lsn: item.endLsn }
        : { lsn: at.lsn, partial: { txn: item.finalLsn, through: item.through } };
  }
  return at;
}

/** Undefined `partial` is left out when the cursor or range is stored as JSON. */
type Stored = { lsn: string; partial?: { txn: string; through: string } | undefined };

function parsed(stored: Stored): Position {
  const { partial } = stored;
  return {
    lsn: parseLsn(stored.lsn),
    ...(partial ? { partial: { txn: parseLsn(partial.txn), through: parseLsn(partial.through) } } : {}),
  };
}

/** The position as a cursor or a range stores it. */
export function stored(position: Position): Stored {
  const { partial } = position;
  return {
    lsn: formatLsn(position.lsn),
    ...(partial ? { partial: { txn: formatLsn(partial.txn), through: formatLsn(partial.through) } } : {}),
  };
}

export const cursorPosition = (cursor: Cursor): Position => parsed(cursor);

export const rangeFrom = (range: ChangesRange): Position =>
  parsed({ lsn: range.from, partial: range.fromPartial });

export const rangeTo = (range: ChangesRange): Position => parsed({ lsn: range.to, partial: range.toPartial });

/**
 * A range as a bad record's source names it: its LSNs and, for an end inside a large transaction
 * read in pieces (a piece starts and ends at the same whole-transaction LSN), which change.
 */
export function rangeLabel(range: ChangesRange): string {
  const inside = (partial: PartialLsn) =>
    `change ${partial.through} of the transaction committed at ${partial.txn}`;
  const within = [
    range.fromPartial ? `after ${inside(range.fromPartial)}` : '',
    range.toPartial ? `through ${inside(range.toPartial)}` : '',
  ].filter((part) => part !== '');
  return `changes ${range.from}..${range.to}${within.length > 0 ? ` (${within.join(', ')})` : ''}`;
}
