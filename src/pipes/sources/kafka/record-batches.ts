import { compressionsAlgorithmsByBitmask } from '@platformatic/kafka';
import { CodedError } from '../../../errors.js';
import { pooledSection, SectionHold } from './sections.js';

/**
 * One Kafka record as fetched: where its key, value and headers are in its batch's bytes, decoded
 * only when asked. The fetch keeps a partition's records section as the broker sent it and walks
 * it here, so a message costs this one object rather than the client's record, its header list,
 * its key and value views and a copy of ours (test/support/kafka/CLIENT-CHOICE.md).
 */
export class KafkaRecord {
  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly offset: bigint,
    /** Milliseconds since the epoch; -1 when the producer gave none. */
    readonly timestamp: number,
    /** The batch's records, decompressed. */
    readonly bytes: Buffer,
    /** -1 for a null key. */
    private readonly keyStart: number,
    private readonly keyLength: number,
    /** -1 for a null value. */
    readonly valueStart: number,
    readonly valueLength: number,
    private readonly headersStart: number,
    private readonly headerCount: number,
    /** The pooled section `bytes` is part of, held until this record is done with. */
    private section: SectionHold | undefined,
  ) {
    section?.hold();
  }

  /** The record is loaded (or will never be): its section's buffer may serve again once all of its records are. */
  done(): void {
    const section = this.section;
    this.section = undefined;
    section?.release();
  }

  get key(): Buffer | null {
    return this.keyStart < 0 ? null : this.bytes.subarray(this.keyStart, this.keyStart + this.keyLength);
  }

  get value(): Buffer | null {
    return this.valueStart < 0
      ? null
      : this.bytes.subarray(this.valueStart, this.valueStart + this.valueLength);
  }

  get headers(): [Buffer, Buffer][] {
    const headers: [Buffer, Buffer][] = [];
    const at = new Cursor(this.bytes, this.headersStart);
    for (let i = 0; i < this.headerCount; i += 1) {
      const key = at.bytes() ?? Buffer.alloc(0);
      headers.push([key, at.bytes() ?? Buffer.alloc(0)]);
    }
    return headers;
  }
}

const malformed = () =>
  new CodedError(
    'SLUICE_ERR_SOURCE_PROTOCOL',
    'a Kafka record batch is malformed: a record runs past its batch',
  );

/** Reads a record's varints from a buffer, moving along it. */
class Cursor {
  constructor(
    readonly buffer: Buffer,
    public at: number,
  ) {}

  /** A zigzag varint of up to 32 bits. */
  varint(): number {
    let value = 0;
    let shift = 0;
    for (;;) {
      const byte = this.byte();
      value |= (byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) break;
      shift += 7;
      if (shift > 28)
        throw new CodedError('SLUICE_ERR_SOURCE_PROTOCOL', 'a Kafka record has a varint too long');
    }
    return (value >>> 1) ^ -(value & 1);
  }

  /** A zigzag varlong, as a number: timestamp deltas fit a double exactly. */
  varlong(): number {
    let value = 0;
    let scale = 1;
    for (let read = 0; ; read += 1) {
      const byte = this.byte();
      value += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) break;
      scale *= 128;
      if (read > 9)
        throw new CodedError('SLUICE_ERR_SOURCE_PROTOCOL', 'a Kafka record has a varlong too long');
    }
    return value % 2 === 0 ? value / 2 : -(value + 1) / 2;
  }

  /** Length-prefixed bytes (-1: null), skipped: returns where they start, or -1. */
  skipBytes(): [start: number, length: number] {
    const length = this.varint();
    if (length < 0) return [-1, 0];
    const start = this.at;
    this.at += length;
    if (this.at > this.buffer.length) throw malformed();
    return [start, length];
  }

  /** A broker's bytes are not trusted: a length or count past the end is an error, not a read of nothing. */
  private byte(): number {
    if (this.at >= this.buffer.length) throw malformed();
    return this.buffer[this.at++] as number;
  }

  bytes(): Buffer | null {
    const [start, length] = this.skipBytes();
    return start < 0 ? null : this.buffer.subarray(start, start + length);
  }
}

/** Record batch attributes: bits 0-2 compression, bit 4 transactional, bit 5 control. */
const COMPRESSION = 0x07;
const TRANSACTIONAL = 0x10;
const CONTROL = 0x20;
/** A control record's key: int16 version, int16 type (0 abort, 1 commit). */
const ABORT_MARKER = 0;
/** Base offset (8) and batch length (4) precede the length they count. */
const LOG_OVERHEAD = 12;
/** The batch header up to its records: 61 bytes in all for magic 2. */
const HEADER = 61;

export interface AbortedTransaction {
  producerId: bigint;
  firstOffset: bigint;
}

export interface WalkedRecords {
  records: KafkaRecord[];
  /** Where the next fetch starts: after the last whole batch, control batches included. */
  next: bigint;
}

/**
 * The records of one partition's fetched records section, from offset `from`, read committed:
 * a batch that starts before `from` (the broker sends whole batches) gives only its later
 * records; control batches (transaction markers) are never records; a transactional batch of a
 * producer whose transaction was aborted is skipped until that producer's abort marker, as Kafka's
 * Java consumer does with the aborted transactions the broker lists; a batch cut short at the end
 * of the section (the broker stops at its byte limit) is left for the next fetch.
 */
export function walkRecords(
  section: Buffer,
  where: { topic: string; partition: number; from: bigint },
  aborted: readonly AbortedTransaction[],
): WalkedRecords {
  // A section in a buffer of the pool goes back once its records are done with.
  const hold = pooledSection(section) ? new SectionHold(section) : undefined;
  try {
    return walkSection(section, where, aborted, hold);
  } finally {
    hold?.settle();
  }
}

function walkSection(
  section: Buffer,
  where: { topic: string; partition: number; from: bigint },
  aborted: readonly AbortedTransaction[],
  hold: SectionHold | undefined,
): WalkedRecords {
  const records: KafkaRecord[] = [];
  const abortedNow = new AbortedProducers(aborted);
  let next = where.from;
  let at = 0;
  while (section.length - at >= LOG_OVERHEAD) {
    const length = section.readInt32BE(at + 8);
    if (section.length - at - LOG_OVERHEAD < length) break;
    const batch = section.subarray(at, at + LOG_OVERHEAD + length);
    at += LOG_OVERHEAD + length;
    const magic = batch.readInt8(16);
    if (magic !== 2)
      throw new CodedError(
        'SLUICE_ERR_SOURCE_PROTOCOL',
        `${where.topic} partition ${where.partition} holds messages in format v${magic}; Sluice reads record batches (v2, Kafka 0.11 and later)`,
      );
    const baseOffset = batch.readBigInt64BE(0);
    const attributes = batch.readInt16BE(21);
    const last = baseOffset + BigInt(batch.readInt32BE(23));
    if (last >= next) next = last + 1n;
    const producerId = batch.readBigInt64BE(43);
    const bytes = recordsOf(batch, attributes);
    if ((attributes & CONTROL) !== 0) {
      abortedNow.marker(producerId, last, controlType(bytes));
      continue;
    }
    if (abortedNow.skips(producerId, last, (attributes & TRANSACTIONAL) !== 0)) continue;
    // A compressed batch's records are in a buffer of their own, not in the section.
    readBatch(records, bytes, batch, where, (attributes & COMPRESSION) === 0 ? hold : undefined);
  }
  return { records, next };
}

/** The batch's records as bytes, decompressed when the batch is. */
function recordsOf(batch: Buffer, attributes: number): Buffer {
  const body = batch.subarray(HEADER);
  const compression = attributes & COMPRESSION;
  if (compression === 0) return body;
  const algorithm = compressionsAlgorithmsByBitmask[compression];
  if (!algorithm)
    throw new CodedError(
      'SLUICE_ERR_SOURCE_PROTOCOL',
      `a Kafka record batch is compressed in a way Sluice does not know (${compression})`,
    );
  return algorithm.decompressSync(body);
}

function readBatch(
  records: KafkaRecord[],
  bytes: Buffer,
  batch: Buffer,
  where: { topic: string; partition: number; from: bigint },
  hold: SectionHold | undefined,
): void {
  const baseOffset = batch.readBigInt64BE(0);
  const baseTimestamp = Number(batch.readBigInt64BE(27));
  const count = batch.readInt32BE(57);
  const at = new Cursor(bytes, 0);
  for (let i = 0; i < count; i += 1) {
    const length = at.varint();
    const end = at.at + length;
    if (length < 0 || end > bytes.length) throw malformed();
    at.at += 1; // attributes: unused
    const timestampDelta = at.varlong();
    const offsetDelta = at.varint();
    const [keyStart, keyLength] = at.skipBytes();
    const [valueStart, valueLength] = at.skipBytes();
    const headerCount = at.varint();
    const headersStart = at.at;
    if (headersStart > end) throw malformed();
    at.at = end;
    const offset = baseOffset + BigInt(offsetDelta);
    if (offset < where.from) continue;
    records.push(
      new KafkaRecord(
        where.topic,
        where.partition,
        offset,
        baseTimestamp < 0 ? -1 : baseTimestamp + timestampDelta,
        bytes,
        keyStart,
        keyLength,
        valueStart,
        valueLength,
        headersStart,
        headerCount,
        hold,
      ),
    );
  }
}

/** A control batch's one record: its key's type (0 abort, 1 commit). */
function controlType(bytes: Buffer): number {
  const at = new Cursor(bytes, 0);
  at.varint(); // length
  at.at += 1;
  at.varlong();
  at.varint();
  const [keyStart, keyLength] = at.skipBytes();
  return keyStart >= 0 && keyLength >= 4 ? bytes.readInt16BE(keyStart + 2) : -1;
}

/** The producers whose aborted transaction the walk is inside of, as the broker listed them. */
class AbortedProducers {
  private readonly pending: AbortedTransaction[];
  private readonly producers = new Set<bigint>();

  constructor(list: readonly AbortedTransaction[]) {
    this.pending = [...list].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : 1));
  }

  skips(producerId: bigint, last: bigint, transactional: boolean): boolean {
    this.reach(last);
    return transactional && this.producers.has(producerId);
  }

  marker(producerId: bigint, last: bigint, type: number): void {
    this.reach(last);
    if (type === ABORT_MARKER) this.producers.delete(producerId);
  }

  private reach(last: bigint): void {
    while (this.pending.length > 0 && (this.pending[0] as AbortedTransaction).firstOffset <= last) {
      this.producers.add((this.pending.shift() as AbortedTransaction).producerId);
    }
  }
}
