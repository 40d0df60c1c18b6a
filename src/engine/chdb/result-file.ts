import { createReadStream } from 'node:fs';
import { type EngineColumn, type RowStream, UnreadableResultError } from '../engine.js';

const NEWLINE = 0x0a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN = new Set([0x5b, 0x7b]); // [ {
const CLOSE = new Set([0x5d, 0x7d]); // ] }

/**
 * A result file (protocol.ts, RESULT_FILE_FORMAT) read back as a RowStream: its columns from its
 * first two lines, then its rows as JSON objects, made from each line's array on the way through
 * (`[1, "a"]` becomes `{"id":1,"name":"a"}`) without parsing a value or holding a line: pieces of
 * the file's own chunks pass as they are, so any row, however large, streams in constant memory.
 * An empty file (a statement without rows) has no columns; one in another format (the statement
 * named its own FORMAT) is an UnreadableResultError.
 */
export async function readResultFile(
  path: string,
  remove: () => Promise<void>,
  /** The size of the pieces the file is read in (tests make it small, to cut values apart). */
  chunkBytes = 64 * 1024,
): Promise<RowStream> {
  const input = createReadStream(path, { highWaterMark: chunkBytes });
  const chunks = input[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const close = async () => {
    input.destroy();
    await remove();
  };
  try {
    const { header, rest } = await readHeader(chunks);
    if (header.length === 0) {
      await close();
      return { columns: [], rowsJson: empty(), close };
    }
    const [names, types] = header.map(parseHeaderLine);
    if (!names || !types || names.length !== types.length) throw new UnreadableResultError();
    const columns: EngineColumn[] = names.map((name, i) => ({ name, type: types[i] as string }));
    return { columns, rowsJson: objectRows(columns, rest, chunks, close), close };
  } catch (error) {
    await close();
    throw error;
  }
}

async function* empty(): AsyncGenerator<Buffer> {}

/** The first two lines (the column names and types) and what the file holds after them. */
async function readHeader(chunks: AsyncIterator<Buffer>): Promise<{ header: string[]; rest: Buffer }> {
  let held = Buffer.alloc(0);
  const header: string[] = [];
  for (;;) {
    let newline = held.indexOf(NEWLINE);
    while (newline >= 0 && header.length < 2) {
      header.push(held.subarray(0, newline).toString('utf8'));
      held = held.subarray(newline + 1);
      newline = held.indexOf(NEWLINE);
    }
    if (header.length === 2) return { header, rest: held };
    const next = await chunks.next();
    if (next.done) {
      if (header.length === 0 && held.length === 0) return { header, rest: held };
      throw new UnreadableResultError();
    }
    // Two short lines: a header larger than this is not one the engine wrote for these columns.
    if (held.length > 16 * 1024 * 1024) throw new UnreadableResultError();
    held = Buffer.concat([held, next.value]);
  }
}

function parseHeaderLine(line: string): string[] {
  try {
    const parsed: unknown = JSON.parse(line);
    if (Array.isArray(parsed) && parsed.every((value) => typeof value === 'string')) return parsed;
  } catch {
    // Not JSON: the statement printed its rows in a format of its own.
  }
  throw new UnreadableResultError();
}

/**
 * The rows as JSON objects separated by commas (no brackets around them), byte ranges of the file's
 * chunks with the names put in front of each value: a comma between two values of a row (outside
 * any string or nested value) becomes `,"<name>":`, a row's `[` becomes `{"<first name>":`, its
 * `]` a `}`, and the newline between rows a comma.
 */
async function* objectRows(
  columns: EngineColumn[],
  first: Buffer,
  chunks: AsyncIterator<Buffer>,
  close: () => Promise<void>,
): AsyncGenerator<Buffer> {
  const keys = columns.map((column, i) =>
    Buffer.from(`${i === 0 ? '{' : ','}${JSON.stringify(column.name)}:`),
  );
  const rowEnd = Buffer.from('}');
  const between = Buffer.from(',');
  let depth = 0;
  let inString = false;
  let escaped = false;
  let value = 0;
  let rows = 0;
  try {
    for (let chunk: Buffer | undefined = first; chunk; chunk = await nextChunk(chunks)) {
      const out: Buffer[] = [];
      let from = 0;
      const replace = (at: number, by: Buffer) => {
        out.push(chunk?.subarray(from, at) as Buffer, by);
        from = at + 1;
      };
      for (let at = 0; at < chunk.length; at += 1) {
        const byte = chunk[at] as number;
        if (inString) {
          if (escaped) escaped = false;
          else if (byte === BACKSLASH) escaped = true;
          else if (byte === QUOTE) inString = false;
        } else if (byte === QUOTE) {
          inString = true;
        } else if (OPEN.has(byte)) {
          depth += 1;
          if (depth === 1) {
            value = 0;
            replace(at, rows++ === 0 ? (keys[0] as Buffer) : Buffer.concat([between, keys[0] as Buffer]));
          }
        } else if (CLOSE.has(byte)) {
          depth -= 1;
          if (depth < 0 || (depth === 0 && value !== keys.length - 1)) throw new UnreadableResultError();
          if (depth === 0) replace(at, rowEnd);
        } else if (byte === COMMA && depth === 1) {
          value += 1;
          const key = keys[value];
          if (!key) throw new UnreadableResultError();
          replace(at, key);
        } else if (byte === NEWLINE && depth === 0) {
          replace(at, Buffer.alloc(0));
        }
      }
      out.push(chunk.subarray(from));
      yield Buffer.concat(out);
    }
  } finally {
    await close();
  }
}

async function nextChunk(chunks: AsyncIterator<Buffer>): Promise<Buffer | undefined> {
  const next = await chunks.next();
  return next.done ? undefined : next.value;
}
