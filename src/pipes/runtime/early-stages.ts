/**
 * How long a run's first answer of its source may take before slot 0's stages are made beside it.
 * Listing an idle folder takes a few milliseconds; a stream's first fetch and flush, hundreds.
 */
export const EARLY_STAGES_AFTER_MS = 50;

/**
 * Slot 0's stages made ahead of a run's first batch, beside the source's first answer (a stream's
 * first fetch and flush: its first rows then wait for no CREATE TABLE), but only when that answer
 * is slow. A source that answers at once gains nothing from them: with files, the batch makes its
 * stages right away; without, an idle run would keep three empty tables a minute (idle-stages.ts),
 * and creating 1,000 idle pipes went from 13-31 s to 67-79 s with their 3,000 CREATE TABLEs in
 * the service's engine beside the creates (bench/idle-pipes.ts). A source whose first answer is
 * never worth them says so (`NoStagesAhead`, src/pipes/sources/contract.ts: object storage, whose
 * listing of an empty folder took over 50 ms on a loaded machine) and the runner skips them.
 */
export class EarlyStages {
  private making: Promise<unknown> | undefined;
  private asked = false;

  constructor(
    /** Makes the stages; never rejects (a failure is the first batch's to meet and report). */
    private readonly make: () => Promise<unknown>,
    private readonly afterMs = EARLY_STAGES_AFTER_MS,
  ) {}

  /** No early stages in this run (an unfinished batch holds slot 0, with stages of its own). */
  skip(): void {
    this.asked = true;
  }

  /** The source's answer; for the run's first, the stages are started once it takes `afterMs`. */
  async answer<T>(asking: Promise<T>): Promise<T> {
    if (this.asked) return asking;
    this.asked = true;
    let timer: NodeJS.Timeout | undefined;
    const slow = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.afterMs);
    });
    try {
      const answered = asking.then(
        () => false,
        () => false,
      );
      if (await Promise.race([answered, slow.then(() => true)])) this.making = this.make();
      return await asking;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Waits for the stages being made, if any: none is still being made once this returns. */
  async settled(): Promise<void> {
    const making = this.making;
    this.making = undefined;
    await making;
  }
}
