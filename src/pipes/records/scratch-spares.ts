import { randomUUID } from 'node:crypto';
import { rename } from 'node:fs/promises';
import { type Engine, TRANSIENT_SCRATCH_PREFIX } from '../../engine/index.js';

/** An engine's spares of one kind, and those being renamed into it now (counted toward the most kept). */
interface Pool {
  names: string[];
  renaming: number;
  /** Removes the spares once none was taken or kept for SPARES_IDLE_MS. */
  idle?: NodeJS.Timeout;
}

/** How long spares no load took or kept are left in the scratch space, by default. */
const SPARES_IDLE_MS = 60_000;

/**
 * Per engine, scratch files of one kind that this process's loads are done with, kept under names
 * of their own (TRANSIENT_SCRATCH_PREFIX) for the next loads to take: a spare FIFO spares a
 * `mkfifo` (records/stream-load.ts), a spare text file the new memory its text would otherwise be
 * written into (records/scratch-text.ts). A file is kept only once nothing holds it open; the engine
 * removes the spares whenever it starts, and those a killed Sluice left.
 */
export class ScratchSpares {
  private readonly pools = new WeakMap<Engine, Pool>();
  /** Spares an idle removal could not remove (left to the engine's next start), for whoever asks. */
  removalsFailed = 0;

  constructor(
    /** Part of a spare's name, for whoever looks into a scratch space. */
    private readonly kind: string,
    private readonly most: number,
    private readonly idleMs = SPARES_IDLE_MS,
  ) {}

  /** Renames a spare to the scratch name `name`; false when there is none (the caller makes the file). */
  async take(engine: Engine, name: string): Promise<boolean> {
    const pool = this.pools.get(engine);
    const spare = pool?.names.pop();
    if (!pool || spare === undefined) return false;
    this.stillUsed(engine, pool);
    try {
      await rename(engine.scratchPath(spare), engine.scratchPath(name));
      return true;
    } catch (error) {
      // Gone with the scratch space (an engine's restart empties it): the caller makes a new one.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      return false;
    }
  }

  /** Keeps the scratch file `name` for a later `take`, or removes it when enough are kept. */
  async keep(engine: Engine, name: string): Promise<void> {
    const pool = this.poolOf(engine);
    if (pool.names.length + pool.renaming >= this.most) return engine.removeScratch(name);
    const spare = `${TRANSIENT_SCRATCH_PREFIX}${this.kind}-${randomUUID()}`;
    pool.renaming += 1;
    try {
      await rename(engine.scratchPath(name), engine.scratchPath(spare));
    } catch (error) {
      // Never made (a load that failed before writing it): nothing to keep.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    } finally {
      pool.renaming -= 1;
    }
    pool.names.push(spare);
    this.stillUsed(engine, pool);
  }

  private poolOf(engine: Engine): Pool {
    let pool = this.pools.get(engine);
    if (!pool) {
      pool = { names: [], renaming: 0 };
      this.pools.set(engine, pool);
    }
    return pool;
  }

  /** Pushes back the removal of an engine's spares: loads still use them. */
  private stillUsed(engine: Engine, pool: Pool): void {
    clearTimeout(pool.idle);
    pool.idle = setTimeout(async () => {
      const names = pool.names.splice(0);
      // A removal that fails leaves the file to the engine's next start (clearLeftovers).
      const removed = await Promise.allSettled(names.map((name) => engine.removeScratch(name)));
      this.removalsFailed += removed.filter((r) => r.status === 'rejected').length;
    }, this.idleMs);
    pool.idle.unref();
  }
}
