import { BufferPool } from '../../../buffer-pool.js';
import type { MessagePlan } from './plan.js';
import { jsonVirtual, type MessageSource } from './source.js';

const [OPEN, CLOSE, NEWLINE, RETURN, SPACE, TAB] = [0x7b, 0x7d, 0x0a, 0x0d, 0x20, 0x09];
const CHUNK_BYTES = 1024 * 1024;
/** A batch text's chunks, given back once the text is written (json-load.ts): two batches' worth at the default byte budget. */
export const textChunks = new BufferPool(CHUNK_BYTES, 64);

/**
 * The JSONEachRow text the engine parses for a batch: each message's own object, one per line,
 * with the virtual columns the mappings use as its first fields, so the engine reads message and
 * position in one pass and a record that does not parse or fit costs only its own line. A message
 * that is not one JSON object is refused here, with its reason (`refused`); `lines` says which
 * message each line of the text is. Each value's bytes are copied from where the source holds
 * them (a Kafka record batch, a Kinesis record) into the text, without a view or a string made
 * for the message.
 */
export function recordsText<M>(
  how: MessagePlan<M>,
  messages: readonly M[],
  indices: readonly number[] = messages.map((_, index) => index),
) {
  const text = new BatchText();
  const lines: number[] = [];
  const refused: { index: number; error: string }[] = [];
  const { source } = how;
  for (const index of indices) {
    const message = messages[index] as M;
    const object = objectBounds(source, message);
    if (!object) {
      refused.push({ index, error: 'a JSONEachRow message must be one JSON object' });
      continue;
    }
    // The object without its closing brace; the virtual columns go before it.
    const fields = virtualFields(how, message);
    if (fields) {
      // The virtual columns first: of two equal keys the engine's JSON reader keeps the first, so a
      // message's own `_offset` (say) cannot stand in for where the message really is.
      text.write(object.empty ? `{${fields}` : `{${fields},`);
      text.copy(source.valueBytes(message), object.start + 1, object.end);
    } else text.copy(source.valueBytes(message), object.start, object.end);
    text.endLine();
    lines.push(index);
  }
  return { chunks: text.end(), lines, refused };
}

/**
 * Chunks of text of a batch, one message a line. Newlines inside a message (JSON allows them only
 * between tokens, where they are whitespace) become spaces when a chunk ends, found by the native
 * search rather than byte by byte: every newline of a chunk that is not a line's end is one.
 */
class BatchText {
  private readonly chunks: Buffer[] = [];
  private current = textChunks.take(CHUNK_BYTES);
  private at = 0;
  private lineEnds: number[] = [];

  copy(from: Buffer, start: number, end: number): void {
    this.room(end - start);
    this.at += from.copy(this.current, this.at, start, end);
  }

  write(text: string): void {
    this.room(Buffer.byteLength(text));
    this.at += this.current.write(text, this.at);
  }

  endLine(): void {
    this.room(2);
    this.current[this.at++] = CLOSE;
    this.lineEnds.push(this.at);
    this.current[this.at++] = NEWLINE;
  }

  end(): Buffer[] {
    this.close();
    return this.chunks;
  }

  /** Makes room for `bytes` more; a line may span chunks (the engine reads the file whole). */
  private room(bytes: number): void {
    if (this.at + bytes <= this.current.length) return;
    this.close();
    this.current = textChunks.take(Math.max(CHUNK_BYTES, bytes));
  }

  private close(): void {
    if (this.at === 0) return;
    const chunk = this.current.subarray(0, this.at);
    let line = 0;
    for (let at = chunk.indexOf(NEWLINE); at >= 0; at = chunk.indexOf(NEWLINE, at + 1)) {
      if (at === this.lineEnds[line]) line += 1;
      else chunk[at] = SPACE;
    }
    for (let at = chunk.indexOf(RETURN); at >= 0; at = chunk.indexOf(RETURN, at + 1)) chunk[at] = SPACE;
    this.chunks.push(chunk);
    this.lineEnds = [];
    this.at = 0;
  }
}

/**
 * Where the message's object starts and where its closing brace is, in its source's bytes;
 * undefined when the value is not an object.
 */
function objectBounds<M>(
  source: MessageSource<M>,
  message: M,
): { start: number; end: number; empty: boolean } | undefined {
  const at = source.valueAt(message);
  const length = source.valueLength(message);
  if (at < 0 || length < 2) return undefined;
  const bytes = source.valueBytes(message);
  let start = at;
  let end = at + length - 1;
  while (start < end && isSpace(bytes[start] as number)) start += 1;
  while (end > start && isSpace(bytes[end] as number)) end -= 1;
  if (bytes[start] !== OPEN || bytes[end] !== CLOSE) return undefined;
  let inner = end - 1;
  while (inner > start && isSpace(bytes[inner] as number)) inner -= 1;
  return { start, end, empty: inner === start };
}

function isSpace(byte: number): boolean {
  return byte === SPACE || byte === NEWLINE || byte === RETURN || byte === TAB;
}

function virtualFields<M>(how: MessagePlan<M>, message: M): string {
  const { source, virtual } = how;
  if (virtual.length === 0) return '';
  return virtual
    .map((column) => {
      const type = source.virtualTypes[column];
      if (!type) throw new Error(`no type for the virtual column ${column}`);
      return `"${column}":${jsonVirtual(type, source.virtualValue(column, message))}`;
    })
    .join(',');
}
