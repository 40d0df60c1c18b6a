import { BufferPool } from '../../../buffer-pool.js';

/** The most a Fetch asks of one partition (fetch.ts); the broker sends more only for one batch larger than it. */
export const PARTITION_MAX_BYTES = 4 * 1024 * 1024;

/** Four batches' worth at the default byte budget. */
const sections = new BufferPool(PARTITION_MAX_BYTES, 32);

/**
 * A partition's records section as one buffer, copied out of the connection's read buffers
 * (the client keeps a response as the socket's chunks). A large one is copied into a buffer of
 * the pool, which serves again once the records walked from it are done with (SectionHold).
 */
export function sectionOf(parts: readonly Buffer[], size: number): Buffer {
  const target = sections.take(size);
  let at = 0;
  for (const part of parts) at += part.copy(target, at);
  return target.subarray(0, size);
}

/** Whether `section` lies in a buffer of the pool, to hand back once its records are done with. */
export function pooledSection(section: Buffer): boolean {
  return sections.owns(section);
}

/**
 * The records of a pooled section still in use: each record walked from its bytes holds it, and
 * the last one done with (loaded, or never taken) hands the buffer back to the pool. A record
 * dropped without being done with (a partition given to another member) keeps it from the pool,
 * and the garbage collector takes it: a buffer is never handed out while a record can read it.
 */
export class SectionHold {
  private held = 0;
  private settled = false;

  constructor(private readonly bytes: Buffer) {}

  hold(): void {
    this.held += 1;
  }

  release(): void {
    this.held -= 1;
    if (this.held === 0 && this.settled) sections.give([this.bytes]);
  }

  /** The walk is over: no record holds more from now on. */
  settle(): void {
    this.settled = true;
    if (this.held === 0) sections.give([this.bytes]);
  }
}
