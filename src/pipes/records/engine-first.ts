import type { Logger } from 'pino';

/**
 * After the service's engine refused to load a batch's records itself, this many of the pipe's
 * next batches go straight through the source reader, which sets bad records aside: a source with
 * a bad record in most batches does not have each parsed twice.
 */
const READER_ONLY_AFTER_REFUSAL = 16;

/**
 * Whether a pipe's batches are loaded by the service's engine itself first (a stream's JSON
 * messages, sources/messages/json-load.ts; an object-storage file copied as it is,
 * records/copy-load.ts), for one run of its reader: after a refusal, the next batches are not.
 */
export class EngineFirst {
  private readerOnly = 0;

  /** `what`: a batch's records as the log names them ("messages", "files"). */
  constructor(
    private readonly logger: Logger,
    private readonly what: string,
  ) {}

  /** Whether the next batch is tried in the service's engine first. */
  take(): boolean {
    if (this.readerOnly === 0) return true;
    this.readerOnly -= 1;
    return false;
  }

  refused(error: Error, name: string): void {
    this.readerOnly = READER_ONLY_AFTER_REFUSAL;
    this.logger.info(
      { err: error, batch: name },
      `the engine could not load a batch's ${this.what} itself: the source reader reads it and sets aside the records it cannot take, as it reads the next ${READER_ONLY_AFTER_REFUSAL} batches`,
    );
  }
}
