import { batchLimits, FirstMessages, type StreamFlush } from '../messages/index.js';
import type { PartitionState } from './member.js';

/** How many batches' worth of messages a member holds before it stops fetching (fetchable). */
const BUFFERED_BATCHES = 2;

/**
 * What a Kafka run does until its first batch is visible (README, "How a Kafka pipe runs",
 * Flush): its first answer waits for its first messages, its first fetch asks for no more than the
 * first batch takes, and on a backlog that batch runs alone until it commits. Everything beside
 * it (the next batches' fetches, stages and loads) would take the cores its rows wait for.
 */
export class FirstBatch {
  /** Whether the run claimed a batch yet: the first flushes sooner (flushDue). */
  claimed = false;
  /** Whether a batch of the run committed yet. */
  committed = false;
  private readonly firstMessages = new FirstMessages();

  constructor(
    private readonly flush: StreamFlush,
    /** Batches in flight once the first committed. */
    private readonly batchesInFlight: number,
  ) {}

  /** A fetch brought messages. */
  fetched(): void {
    this.firstMessages.arrived();
  }

  /** The run's first answer waits for its first messages (messages/first-messages.ts). */
  firstAnswer(signal: AbortSignal): Promise<void> {
    return this.firstMessages.firstAnswer(signal);
  }

  /** Batches the run may have in flight now (`LimitsInFlight`). */
  inFlight(partitions: Iterable<PartitionState>): number {
    return this.alone(partitions) ? 1 : this.batchesInFlight;
  }

  /**
   * The most a member holds before it stops fetching, and so the most a fetch asks for.
   * Backpressure: a member with two batches' worth waiting fetches no more until one is claimed.
   * With one batch's worth, the next batch's fetch waited for the last one's claim and the engine
   * idled between loads (README, "Benchmarks": 15% more steady throughput with two). A run's first
   * fetch, and a backlog's until its first batch commits, take only the first batch's worth.
   */
  fetchLimits(partitions: Iterable<PartitionState>): { bytes: number; rows: number } {
    if (!this.claimed || this.alone(partitions)) return batchLimits(this.flush, true);
    return { bytes: BUFFERED_BATCHES * this.flush.bytes, rows: BUFFERED_BATCHES * this.flush.rows };
  }

  /**
   * Until its first batch commits, a run reading a backlog has that batch alone in flight and
   * fetches no more. A run that has caught up goes on fetching: messages arriving now would
   * otherwise wait for the first batch to be visible.
   */
  private alone(partitions: Iterable<PartitionState>): boolean {
    if (this.committed) return false;
    for (const partition of partitions) if (partition.behind) return true;
    return false;
  }
}
