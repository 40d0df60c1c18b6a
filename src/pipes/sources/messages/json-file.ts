import type { MessagePlan } from './plan.js';
import { jsonVirtual } from './source.js';

const [OPEN, CLOSE, NEWLINE, RETURN, SPACE, TAB] = [0x7b, 0x7d, 0x0a, 0x0d, 0x20, 0x09];
const CHUNK_BYTES = 1024 * 1024;

/**
 * The JSONEachRow text the engine parses for a batch: each message's own object, one per line,
 * with the virtual columns the mappings use appended as fields, so the engine reads message and
 * position in one pass and a record that does not parse or fit costs only its own line. A message
 * that is not one JSON object is refused here, with its reason (`refused`); `lines` says which
 * message each line of the text is.
 */
export function recordsText<M>(
  how: MessagePlan<M>,
  messages: readonly M[],
  indices: readonly number[] = messages.map((_, index) => index),
) {
  const chunks: Buffer[] = [];
  const lines: number[] = [];
  const refused: { index: number; error: string }[] = [];
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const push = (piece: Buffer) => {
    pending.push(piece);
    pendingBytes += piece.length;
    if (pendingBytes >= CHUNK_BYTES) {
      chunks.push(Buffer.concat(pending));
      pending = [];
      pendingBytes = 0;
    }
  };
  for (const index of indices) {
    const message = messages[index] as M;
    const value = how.source.value(message);
    const object = objectBounds(value);
    if (!object) {
      refused.push({ index, error: 'a JSONEachRow message must be one JSON object' });
      continue;
    }
    // Newlines between tokens are whitespace; within strings JSON allows none: one line per message.
    const body = oneLine((value as Buffer).subarray(object.start, object.end));
    const fields = virtualFields(how, message);
    push(body);
    push(Buffer.from(`${fields && !object.empty ? ',' : ''}${fields}}\n`));
    lines.push(index);
  }
  if (pending.length > 0) chunks.push(Buffer.concat(pending));
  return { chunks, lines, refused };
}

/** Where the object's text starts and where its closing brace is; undefined when not an object. */
function objectBounds(value: Buffer | null): { start: number; end: number; empty: boolean } | undefined {
  if (!value || value.length < 2) return undefined;
  let start = 0;
  let end = value.length - 1;
  while (start < end && isSpace(value[start] as number)) start += 1;
  while (end > start && isSpace(value[end] as number)) end -= 1;
  if (value[start] !== OPEN || value[end] !== CLOSE) return undefined;
  let inner = end - 1;
  while (inner > start && isSpace(value[inner] as number)) inner -= 1;
  return { start, end, empty: inner === start };
}

function isSpace(byte: number): boolean {
  return byte === SPACE || byte === NEWLINE || byte === RETURN || byte === TAB;
}

function oneLine(text: Buffer): Buffer {
  if (text.indexOf(NEWLINE) < 0 && text.indexOf(RETURN) < 0) return text;
  const copy = Buffer.from(text);
  for (let i = 0; i < copy.length; i += 1) if (copy[i] === NEWLINE || copy[i] === RETURN) copy[i] = SPACE;
  return copy;
}

function virtualFields<M>(how: MessagePlan<M>, message: M): string {
  const { source, virtual } = how;
  return virtual
    .map((column) => {
      const type = source.virtualTypes[column];
      if (!type) throw new Error(`no type for the virtual column ${column}`);
      return `"${column}":${jsonVirtual(type, source.virtualValue(column, message))}`;
    })
    .join(',');
}
