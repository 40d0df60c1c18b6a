import type { KafkaMessage } from './fetch.js';

/** Kafka's virtual columns and the types the engine reads them with (reference/pipes.md). */
export const KAFKA_VIRTUAL_TYPES = {
  _key: 'String',
  _timestamp: 'DateTime64(3)',
  _partition: 'Int32',
  _offset: 'Int64',
  _topic: 'String',
  _header_keys: 'Array(String)',
  _header_values: 'Array(String)',
  _raw_message: 'String',
} as const;

export type KafkaVirtualColumn = keyof typeof KAFKA_VIRTUAL_TYPES;
export const KAFKA_VIRTUAL_COLUMNS = Object.keys(KAFKA_VIRTUAL_TYPES) as KafkaVirtualColumn[];

/** A message with where it came from. */
export interface SourcedMessage {
  topic: string;
  partition: number;
  message: KafkaMessage;
}

const [OPEN, CLOSE, NEWLINE, RETURN, SPACE, TAB] = [0x7b, 0x7d, 0x0a, 0x0d, 0x20, 0x09];
const CHUNK_BYTES = 1024 * 1024;

/**
 * The JSONEachRow text the engine parses for a batch: each message's own object, one per line,
 * with the virtual columns the mappings use appended as fields, so the engine reads message and
 * position in one pass and a record that does not parse or fit costs only its own line. A message
 * that is not one JSON object is refused here, with its reason (`refused`); `lines` says which
 * message each line of the text is.
 */
export function recordsText(
  messages: readonly SourcedMessage[],
  columns: readonly KafkaVirtualColumn[],
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
    const sourced = messages[index] as SourcedMessage;
    const object = objectBounds(sourced.message.value);
    if (!object) {
      refused.push({ index, error: 'a JSONEachRow message must be one JSON object' });
      continue;
    }
    const value = sourced.message.value as Buffer;
    // Newlines between tokens are whitespace; within strings JSON allows none: one line per message.
    const body = oneLine(value.subarray(object.start, object.end));
    const fields = virtualFields(sourced, columns);
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

function virtualFields(sourced: SourcedMessage, columns: readonly KafkaVirtualColumn[]): string {
  if (columns.length === 0) return '';
  const { message } = sourced;
  return columns.map((column) => `"${column}":${virtualValue(column, sourced, message)}`).join(',');
}

function virtualValue(column: KafkaVirtualColumn, sourced: SourcedMessage, message: KafkaMessage): string {
  switch (column) {
    case '_key':
      return JSON.stringify(message.key ? message.key.toString('utf8') : '');
    case '_timestamp':
      return JSON.stringify(new Date(Number(message.timestamp)).toISOString());
    case '_partition':
      return String(sourced.partition);
    case '_offset':
      return message.offset.toString();
    case '_topic':
      return JSON.stringify(sourced.topic);
    case '_header_keys':
      return JSON.stringify(message.headers.map(([key]) => key.toString('utf8')));
    case '_header_values':
      return JSON.stringify(message.headers.map(([, value]) => value.toString('utf8')));
    case '_raw_message':
      return JSON.stringify(message.value ? message.value.toString('utf8') : '');
  }
}
