import { avroByteArray, avroBytes, avroLong } from './avro.js';

/** The engine types a stream's virtual columns are read as. */
export type VirtualType = 'String' | 'DateTime64(3)' | 'Int32' | 'Int64' | 'Array(String)';

/**
 * A virtual column's value for one message: text or bytes (String), milliseconds since the
 * epoch (DateTime64(3)), a number (Int32, Int64), or a list of byte strings (Array(String)).
 */
export type VirtualValue = string | number | bigint | Buffer | null | readonly Buffer[];

/**
 * What the message loader needs to know of a stream's messages (Kafka, Kinesis): their bytes,
 * their virtual columns, and where each is, for the error table and for validateSamples' words.
 */
export interface MessageSource<M> {
  virtualTypes: Readonly<Record<string, VirtualType>>;
  value(message: M): Buffer | null;
  /**
   * Where the value's bytes are without a view made for each message (json-file.ts copies them
   * straight into the batch's text): the bytes holding it, where it starts (-1 for a null value),
   * its length.
   */
  valueBytes(message: M): Buffer;
  valueAt(message: M): number;
  valueLength(message: M): number;
  virtualValue(column: string, message: M): VirtualValue;
  /** The error table's `source`: the message's place in its stream. */
  position(message: M): string;
  /** The error table's `row`: a number for the message within its partition or shard. */
  row(message: M): number;
  /** The message's place in words, as a 400 from validateSamples names it. */
  describe(message: M): string;
  /** When the message was made at its source (ms since the epoch), for the pipe's history; undefined when unknown. */
  producedAt(message: M): number | undefined;
  /** The message is loaded and nothing reads it again: the buffer holding it may serve again. */
  done?(message: M): void;
}

/** A virtual value as a JSON value the engine reads as the column's type. */
export function jsonVirtual(type: VirtualType, value: VirtualValue): string {
  switch (type) {
    case 'DateTime64(3)':
      return JSON.stringify(new Date(Number(value)).toISOString());
    case 'Int32':
    case 'Int64':
      return String(value);
    case 'Array(String)':
      return JSON.stringify(((value ?? []) as readonly Buffer[]).map((item) => item.toString('utf8')));
    case 'String':
      return JSON.stringify(Buffer.isBuffer(value) ? value.toString('utf8') : String(value ?? ''));
  }
}

/** The Avro type a virtual column is written as in a container file's schema. */
export function avroVirtualType(type: VirtualType): unknown {
  switch (type) {
    case 'DateTime64(3)':
      return { type: 'long', logicalType: 'timestamp-millis' };
    case 'Int32':
      return 'int';
    case 'Int64':
      return 'long';
    case 'Array(String)':
      return { type: 'array', items: 'bytes' };
    case 'String':
      return 'bytes';
  }
}

/** A virtual value as Avro data of avroVirtualType(type). */
export function avroVirtual(type: VirtualType, value: VirtualValue): Buffer {
  switch (type) {
    case 'DateTime64(3)':
    case 'Int32':
    case 'Int64':
      return avroLong(value as number | bigint);
    case 'Array(String)':
      return avroByteArray([...((value ?? []) as readonly Buffer[])]);
    case 'String':
      return avroBytes(Buffer.isBuffer(value) ? value : Buffer.from(String(value ?? '')));
  }
}
