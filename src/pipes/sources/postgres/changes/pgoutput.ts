// pgoutput, protocol version 1, as PostgreSQL documents it ("Logical Replication Message
// Formats"). Values stay PostgreSQL's text: they go to the engine as they came, never through a
// JavaScript type.

import { CodedError } from '../../../../errors.js';

/** A value of a row: its text, NULL, or a TOASTed value the update did not change (not sent). */
export type Value = string | null | typeof UNCHANGED;
export const UNCHANGED: unique symbol = Symbol('unchanged TOAST value');

export interface Relation {
  oid: number;
  schema: string;
  name: string;
  replicaIdentity: string;
  columns: { name: string; typeOid: number; typmod: number; key: boolean }[];
}

export type Message =
  | { tag: 'begin'; finalLsn: bigint; xid: number }
  | { tag: 'commit'; commitLsn: bigint; endLsn: bigint }
  | { tag: 'relation'; relation: Relation }
  | { tag: 'insert'; relation: Relation; row: Value[] }
  | { tag: 'update'; relation: Relation; old: Value[] | null; oldIsKey: boolean; row: Value[] }
  | { tag: 'delete'; relation: Relation; old: Value[]; oldIsKey: boolean }
  | { tag: 'truncate'; relations: Relation[] }
  | { tag: 'other' };

class Reader {
  at = 0;
  constructor(private readonly buffer: Buffer) {}
  byte(): number {
    return this.buffer.readUInt8(this.at++);
  }
  int16(): number {
    const value = this.buffer.readInt16BE(this.at);
    this.at += 2;
    return value;
  }
  int32(): number {
    const value = this.buffer.readInt32BE(this.at);
    this.at += 4;
    return value;
  }
  uint32(): number {
    const value = this.buffer.readUInt32BE(this.at);
    this.at += 4;
    return value;
  }
  int64(): bigint {
    const value = this.buffer.readBigUInt64BE(this.at);
    this.at += 8;
    return value;
  }
  string(): string {
    const end = this.buffer.indexOf(0, this.at);
    const value = this.buffer.toString('utf8', this.at, end);
    this.at = end + 1;
    return value;
  }
  text(length: number): string {
    const value = this.buffer.toString('utf8', this.at, this.at + length);
    this.at += length;
    return value;
  }
}

/** Decodes pgoutput messages; remembers the relations the stream described. */
export class PgoutputDecoder {
  private readonly relations = new Map<number, Relation>();

  decode(buffer: Buffer): Message {
    const reader = new Reader(buffer);
    const tag = String.fromCharCode(reader.byte());
    switch (tag) {
      case 'B': {
        const finalLsn = reader.int64();
        reader.int64(); // commit time
        return { tag: 'begin', finalLsn, xid: reader.int32() };
      }
      case 'C': {
        reader.byte(); // flags
        const commitLsn = reader.int64();
        return { tag: 'commit', commitLsn, endLsn: reader.int64() };
      }
      case 'R':
        return { tag: 'relation', relation: this.relation(reader) };
      case 'I': {
        const relation = this.known(reader.uint32());
        reader.byte(); // 'N'
        return { tag: 'insert', relation, row: tuple(reader) };
      }
      case 'U': {
        const relation = this.known(reader.uint32());
        let kind = String.fromCharCode(reader.byte());
        let old: Value[] | null = null;
        const oldIsKey = kind === 'K';
        if (kind === 'K' || kind === 'O') {
          old = tuple(reader);
          kind = String.fromCharCode(reader.byte());
        }
        return { tag: 'update', relation, old, oldIsKey, row: tuple(reader) };
      }
      case 'D': {
        const relation = this.known(reader.uint32());
        const kind = String.fromCharCode(reader.byte());
        return { tag: 'delete', relation, old: tuple(reader), oldIsKey: kind === 'K' };
      }
      case 'T': {
        const count = reader.int32();
        reader.byte(); // options
        const relations: Relation[] = [];
        for (let i = 0; i < count; i += 1) relations.push(this.known(reader.uint32()));
        return { tag: 'truncate', relations };
      }
      default:
        // Origin, Type and Message: nothing a pipe writes.
        return { tag: 'other' };
    }
  }

  private relation(reader: Reader): Relation {
    const oid = reader.uint32();
    const schema = reader.string();
    const name = reader.string();
    const replicaIdentity = String.fromCharCode(reader.byte());
    const count = reader.int16();
    const columns: Relation['columns'] = [];
    for (let i = 0; i < count; i += 1) {
      const flags = reader.byte();
      columns.push({
        key: (flags & 1) === 1,
        name: reader.string(),
        typeOid: reader.uint32(),
        typmod: reader.int32(),
      });
    }
    const relation = { oid, schema, name, replicaIdentity, columns };
    this.relations.set(oid, relation);
    return relation;
  }

  private known(oid: number): Relation {
    const relation = this.relations.get(oid);
    // The server sends a relation before its first change on every stream.
    if (!relation)
      throw new CodedError(
        'SLUICE_ERR_SOURCE_PROTOCOL',
        `pgoutput: a change of relation ${oid} came before its description`,
      );
    return relation;
  }
}

function tuple(reader: Reader): Value[] {
  const count = reader.int16();
  const values: Value[] = new Array(count);
  for (let i = 0; i < count; i += 1) {
    const kind = String.fromCharCode(reader.byte());
    if (kind === 'n') values[i] = null;
    else if (kind === 'u') values[i] = UNCHANGED;
    else values[i] = reader.text(reader.int32());
  }
  return values;
}
