import type { CdcCapacityListener } from '../discovery/index.js';

/** Lets go of a permit; calling it again does nothing. */
export type Release = () => void;

/**
 * Permits for the batches in flight of a service's CDC pipes (those whose connector
 * SharesCdcCapacity, sources/contract.ts: PostgreSQL's), all together: as many as the
 * cores its pipesCdcScaling gives them (README, "Resources of a service's database pipes"),
 * unlimited while it was never set.
 * A batch holds one from before it is claimed until it is committed (or fails), so a snapshot
 * range and a batch of changes of any of the service's pipes count alike.
 */
export class Permits {
  private held = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private size: number | undefined) {}

  /** Waits for a permit (or rejects when `signal` aborts first). */
  acquire(signal: AbortSignal): Promise<Release> {
    signal.throwIfAborted();
    if (this.size === undefined || this.held < this.size) return Promise.resolve(this.take());
    return new Promise<Release>((resolve, reject) => {
      const wake = () => {
        signal.removeEventListener('abort', abort);
        resolve(this.take());
      };
      const abort = () => {
        const at = this.waiting.indexOf(wake);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(signal.reason);
      };
      this.waiting.push(wake);
      signal.addEventListener('abort', abort, { once: true });
    });
  }

  /** A new size applies at once: more permits wake waiters, fewer let the held ones finish. */
  resize(size: number | undefined): void {
    this.size = size;
    this.wakeWhileFree();
  }

  private take(): Release {
    this.held += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= 1;
      this.wakeWhileFree();
    };
  }

  private wakeWhileFree(): void {
    while (this.waiting.length > 0 && (this.size === undefined || this.held < this.size)) {
      this.waiting.shift()?.();
    }
  }
}

/**
 * The permits of every service, each sized from the service's stored pipesCdcScaling when first
 * asked, and resized when a PATCH changes it.
 */
export class CdcCapacity implements CdcCapacityListener {
  private readonly services = new Map<string, { permits: Permits; sized: Promise<void> }>();

  constructor(
    /** The service's stored millicores; undefined when never set. */
    private readonly stored: (serviceId: string) => Promise<number | undefined>,
  ) {}

  async forService(serviceId: string): Promise<Permits> {
    let entry = this.services.get(serviceId);
    if (!entry) {
      const permits = new Permits(undefined);
      const sized = this.stored(serviceId).then((millicores) => {
        // A PATCH that came while the store was read has the last word.
        if (this.services.get(serviceId)?.permits === permits && !changed.has(permits))
          permits.resize(coresOf(millicores));
      });
      entry = { permits, sized };
      this.services.set(serviceId, entry);
      // The pipe that asked gets the store's error (its run fails and retries); the entry is not
      // kept, so the next start asks the store again.
      sized.catch(() => this.services.delete(serviceId));
    }
    await entry.sized;
    return entry.permits;
  }

  cdcScalingChanged(serviceId: string, replicaCpuMillicores: number): void {
    const entry = this.services.get(serviceId);
    if (!entry) return;
    changed.add(entry.permits);
    entry.permits.resize(coresOf(replicaCpuMillicores));
  }
}

/** Permits resized by a PATCH: the store's older answer must not undo it. */
const changed = new WeakSet<Permits>();

function coresOf(millicores: number | undefined): number | undefined {
  return millicores === undefined ? undefined : Math.max(1, Math.floor(millicores / 1000));
}
