/** Spare buffers not taken for this long are let go, so an idle pipe holds none. */
const KEPT_FOR_MS = 10_000;

/**
 * Buffers of one size, used again once no one reads them. Every new ArrayBuffer counts against
 * V8's external memory, and each 64 MB of it starts a full collection of the heap: a Kafka pipe
 * at 170 MB/s, with a new buffer for each fetched partition and for each batch's text, set off
 * one about every 200 ms (`--trace-incremental-marking`: "Start (external memory pressure)"). A
 * buffer from a pool is no new ArrayBuffer. Kafka's fetched sections
 * (pipes/sources/kafka/sections.ts), stream batches' text (pipes/sources/messages/json-file.ts)
 * and the PostgreSQL COPY relay's blocks (pipes/sources/postgres/snapshot/copy-out.ts) use one each.
 */
export class BufferPool {
  private readonly spare: Buffer[] = [];
  /** The memory of the buffers this pool made: only those are taken back. */
  private readonly made = new WeakSet<ArrayBufferLike>();
  private letGo: NodeJS.Timeout | undefined;

  constructor(
    readonly size: number,
    /** At most this many spares are kept. */
    private readonly mostKept: number,
  ) {}

  /**
   * A buffer of at least `bytes`: one of the pool's when `bytes` fits one and would fill more than
   * a quarter of it (a few bytes do not take a whole spare), a new one of `bytes` otherwise.
   */
  take(bytes: number): Buffer {
    if (bytes > this.size || bytes * 4 <= this.size) return Buffer.allocUnsafe(bytes);
    const spare = this.spare.pop();
    if (spare) return spare;
    // Memory of its own, never a slice of Node's shared pool for small buffers.
    const made = Buffer.allocUnsafeSlow(this.size);
    this.made.add(made.buffer);
    return made;
  }

  /** Whether `buffer` lies in memory this pool made (and may take back once no one reads it). */
  owns(buffer: Buffer): boolean {
    return this.made.has(buffer.buffer);
  }

  /**
   * Buffers the pool made (or views of their start) no one reads any more: they are handed out
   * again. Any other buffer is left to the garbage collector.
   */
  give(buffers: readonly Buffer[]): void {
    for (const buffer of buffers) {
      if (this.spare.length >= this.mostKept) break;
      if (buffer.byteOffset !== 0 || !this.owns(buffer)) continue;
      // Given twice, a buffer would be handed out to two readers at once.
      if (this.spare.some((kept) => kept.buffer === buffer.buffer)) continue;
      this.spare.push(Buffer.from(buffer.buffer, 0, this.size));
    }
    this.letGoLater();
  }

  get kept(): number {
    return this.spare.length;
  }

  private letGoLater(): void {
    if (this.letGo) this.letGo.refresh();
    else {
      this.letGo = setTimeout(() => {
        this.spare.length = 0;
        this.letGo = undefined;
      }, KEPT_FOR_MS);
      this.letGo.unref();
    }
  }
}
