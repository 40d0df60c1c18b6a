import { sleep } from '../../../concurrency.js';

/** The longest a run's first `next()` waits for the first read that brings messages. */
const FIRST_ANSWER_MS = 1_000;

/**
 * A stream run's first answer (`next()`) waits for its first messages, FIRST_ANSWER_MS at most:
 * the runtime makes the first batch's stages meanwhile (src/pipes/runtime/early-stages.ts, which
 * starts them when an answer is slow), and the batch is claimed as they land rather than at the
 * next poll after an idle answer. Later answers do not wait. Kafka's fetches and Kinesis's shard
 * reads say when messages came (`arrived`).
 */
export class FirstMessages {
  /** Aborted by the first read that brings messages. */
  private readonly first = new AbortController();
  private waited = false;

  /** A read brought messages. */
  arrived(): void {
    if (!this.first.signal.aborted) this.first.abort();
  }

  /** Waits for the first messages, once a run (and not past `signal`, the run's stop). */
  async firstAnswer(signal: AbortSignal): Promise<void> {
    if (this.waited) return;
    this.waited = true;
    const woken = AbortSignal.any([signal, this.first.signal]);
    if (!woken.aborted) await sleep(FIRST_ANSWER_MS, woken);
  }
}
