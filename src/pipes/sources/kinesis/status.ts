import type { Logger } from 'pino';
import type { RunContext } from '../contract.js';
import type { ShardReader } from './shard-reader.js';
import type { ShardInfo } from './shards.js';
import type { ShardStatus } from './status-shape.js';

/** A shard that has not read for this long makes the pipe Degraded. */
const DEGRADED_AFTER_MS = 2_000;
const RATE_WINDOW_MS = 60_000;

/**
 * Shards that cannot read now (throttled, Kinesis unreachable) while their readers retry with
 * backoff: the pipe shows Degraded with the reason until every shard reads again.
 */
export class Troubles {
  private readonly since = new Map<string, { at: number; reason: string }>();
  private degraded = false;

  constructor(
    private readonly context: RunContext,
    private readonly logger: Logger,
  ) {}

  set(shard: string, reason: string | undefined): void {
    if (reason === undefined) this.since.delete(shard);
    else if (!this.since.has(shard)) {
      this.since.set(shard, { at: Date.now(), reason });
      this.logger.info({ shard, reason }, 'a Kinesis shard cannot be read now');
    }
  }

  reason(shard: string): string | undefined {
    return this.since.get(shard)?.reason;
  }

  /** Moves the pipe to Degraded, or back to Running, when that changed. */
  async report(): Promise<void> {
    const lasting = [...this.since.values()].find((t) => Date.now() - t.at >= DEGRADED_AFTER_MS);
    if (lasting && !this.degraded) {
      this.degraded = await this.context.setState('Degraded', lasting.reason, ['Running']);
    } else if (!lasting && this.since.size === 0 && this.degraded) {
      await this.context.setState('Running', 'every shard reads again', ['Degraded']);
      this.degraded = false;
    }
  }
}

/** Records committed per shard over the last minute. */
export class ShardRates {
  private readonly committed = new Map<string, { at: number; records: number }[]>();

  add(shard: string, records: number): void {
    const list = this.committed.get(shard) ?? [];
    list.push({ at: Date.now(), records });
    this.committed.set(shard, list);
  }

  perSecond(shard: string): number {
    const cutoff = Date.now() - RATE_WINDOW_MS;
    const list = (this.committed.get(shard) ?? []).filter((c) => c.at >= cutoff);
    this.committed.set(shard, list);
    const records = list.reduce((n, c) => n + c.records, 0);
    return Math.round((records / (RATE_WINDOW_MS / 1000)) * 10) / 10;
  }
}

/** Per shard of the stream, as `GET .../status` shows it. */
export function shardStatuses(
  shards: readonly ShardInfo[],
  readers: ReadonlyMap<string, ShardReader>,
  troubles: Troubles,
  rates: ShardRates,
): ShardStatus[] {
  return shards.map((shard) => {
    const reader = readers.get(shard.id);
    const trouble = troubles.reason(shard.id);
    return {
      shardId: shard.id,
      parents: shard.parents,
      state: !reader ? 'waiting for its parents' : reader.drained ? 'finished' : 'reading',
      replica: reader?.replica ?? null,
      lastCommittedSequenceNumber: reader?.committedTo ?? null,
      millisBehindLatest: reader?.millisBehindLatest ?? null,
      recordsPerSecond: rates.perSecond(shard.id),
      ...(trouble ? { trouble } : {}),
    };
  });
}
