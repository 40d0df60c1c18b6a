import { randomBytes } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import type { ErrorCode } from '../../../errors.js';

/**
 * The few pieces of Avro's binary encoding Sluice writes and reads itself: longs, bytes, and the
 * frame of an Object Container File (https://avro.apache.org/docs/1.11.1/specification/). Record
 * data is never decoded here: the engine parses it (docs/architecture.md).
 */

const MAGIC = Buffer.from('Obj\x01', 'latin1');
const SYNC_BYTES = 16;

/** A zig-zag varint long. */
export function avroLong(value: bigint | number): Buffer {
  const n = BigInt(value);
  let rest = BigInt.asUintN(64, (n << 1n) ^ (n >> 63n));
  const out: number[] = [];
  while (rest >= 0x80n) {
    out.push(Number(rest & 0x7fn) | 0x80);
    rest >>= 7n;
  }
  out.push(Number(rest));
  return Buffer.from(out);
}

export function avroBytes(bytes: Buffer): Buffer {
  return Buffer.concat([avroLong(bytes.length), bytes]);
}

/** An array of byte strings: one block of all items, then the empty block that ends it. */
export function avroByteArray(items: Buffer[]): Buffer {
  if (items.length === 0) return avroLong(0);
  return Buffer.concat([avroLong(items.length), ...items.map(avroBytes), avroLong(0)]);
}

/** The start of a container file holding `schema`'s records, and the marker after each block. */
export function containerHeader(schema: string, codec: string): { header: Buffer; sync: Buffer } {
  const sync = randomBytes(SYNC_BYTES);
  const metadata = Buffer.concat([
    avroLong(2),
    avroBytes(Buffer.from('avro.schema')),
    avroBytes(Buffer.from(schema)),
    avroBytes(Buffer.from('avro.codec')),
    avroBytes(Buffer.from(codec)),
    avroLong(0),
  ]);
  return { header: Buffer.concat([MAGIC, metadata, sync]), sync };
}

/** One block of a container file: its record count, its size, its (possibly compressed) data. */
export function containerBlock(count: number, data: Buffer, sync: Buffer): Buffer[] {
  return [avroLong(count), avroLong(data.length), data, sync];
}

/** A message that is a whole container file (format Avro): its schema, codec and blocks. */
export interface Container {
  schema: string;
  codec: string;
  blocks: { count: number; data: Buffer }[];
}

export class AvroFrameError extends Error {
  readonly code: ErrorCode = 'SLUICE_ERR_BAD_RECORD';
}

/** Reads a container file's frame: header and blocks, without decoding a record. */
export function readContainer(bytes: Buffer): Container {
  if (bytes.length < MAGIC.length + SYNC_BYTES || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new AvroFrameError('the message is not an Avro container file (it does not start with Obj\\x01)');
  }
  const reader = new FrameReader(bytes, MAGIC.length);
  const metadata = new Map<string, Buffer>();
  for (let count = reader.count(); count !== 0; count = reader.count()) {
    for (let i = 0; i < count; i += 1) metadata.set(reader.bytes().toString('utf8'), reader.bytes());
  }
  const schema = metadata.get('avro.schema')?.toString('utf8');
  if (!schema) throw new AvroFrameError('the Avro container file has no avro.schema');
  const codec = metadata.get('avro.codec')?.toString('utf8') || 'null';
  const sync = reader.take(SYNC_BYTES);
  const blocks: Container['blocks'] = [];
  while (!reader.done()) {
    const count = reader.count();
    const data = reader.take(reader.count());
    if (!reader.take(SYNC_BYTES).equals(sync)) {
      throw new AvroFrameError('the Avro container file has a block without its sync marker');
    }
    blocks.push({ count, data });
  }
  return { schema, codec, blocks };
}

/** A block inflated past this is refused: a Kafka message's records are far smaller. */
const MAX_INFLATED_BYTES = 64 * 1024 * 1024;

/** A block's data uncompressed, for the codecs Node reads itself; undefined for the others. */
export function plainBlockData(codec: string, data: Buffer): Buffer | undefined {
  if (codec === 'null') return data;
  if (codec === 'deflate') {
    try {
      return inflateRawSync(data, { maxOutputLength: MAX_INFLATED_BYTES });
    } catch (error) {
      throw new AvroFrameError(
        `a deflate block does not inflate (or passes 64 MB): ${(error as Error).message}`,
      );
    }
  }
  return undefined;
}

/** How deep a schema's JSON nests (objects and arrays), strings skipped. */
export function nestingDepth(json: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < json.length; i += 1) {
    const c = json[i];
    if (inString) {
      if (c === '\\') i += 1;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') deepest = Math.max(deepest, ++depth);
    else if (c === '}' || c === ']') depth -= 1;
  }
  return deepest;
}

class FrameReader {
  constructor(
    private readonly input: Buffer,
    private at: number,
  ) {}

  done(): boolean {
    return this.at >= this.input.length;
  }

  /** A long that counts something: a negative count is followed by a size (Avro specification, "Maps"). */
  count(): number {
    const value = this.long();
    if (value >= 0) return value;
    this.long();
    return -value;
  }

  bytes(): Buffer {
    return this.take(this.long());
  }

  take(length: number): Buffer {
    if (length < 0 || this.at + length > this.input.length) {
      throw new AvroFrameError('the Avro container file ends early');
    }
    const piece = this.input.subarray(this.at, this.at + length);
    this.at += length;
    return piece;
  }

  private long(): number {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (this.at >= this.input.length || shift > 63n)
        throw new AvroFrameError('the Avro container file ends early');
      const byte = this.input[this.at] as number;
      this.at += 1;
      value |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) break;
    }
    const decoded = (value >> 1n) ^ -(value & 1n);
    if (decoded > BigInt(Number.MAX_SAFE_INTEGER) || decoded < -BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new AvroFrameError('the Avro container file has a size out of range');
    }
    return Number(decoded);
  }
}
