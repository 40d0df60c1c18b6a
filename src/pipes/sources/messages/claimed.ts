import type { Logger } from 'pino';
import { EngineFirst, type RangeRead } from '../../records/index.js';
import type { BatchSink, SourceReader } from '../ports.js';
import { loadMessages } from './load.js';
import type { MessagePlan } from './plan.js';

/**
 * The messages of the ranges a stream source claimed (Kafka, Kinesis), kept until their batch is
 * read. A range claimed by an earlier run is not kept here: its messages are read again from the
 * source, by the positions the range names.
 */
export class ClaimedMessages<M, R> {
  private readonly byRange = new Map<string, M[]>();
  private readonly engineFirst: EngineFirst;

  constructor(
    private readonly readAgain: (range: R) => Promise<M[]>,
    logger: Logger,
  ) {
    this.engineFirst = new EngineFirst(logger, 'messages');
  }

  keep(range: R, messages: M[]): void {
    this.byRange.set(JSON.stringify(range), messages);
  }

  /** Loads a claimed range's messages into the sink (loadMessages); returns what it loaded and set aside. */
  async load(
    range: R,
    sink: BatchSink,
    sourceReader: SourceReader,
    how: MessagePlan<M>,
    name: string,
  ): Promise<RangeRead> {
    const key = JSON.stringify(range);
    const messages = this.byRange.get(key) ?? (await this.readAgain(range));
    const read = await loadMessages(sink, sourceReader, how, messages, name, this.engineFirst);
    this.byRange.delete(key);
    // A failed load keeps them for its retry; a loaded one's are read no more (what it set aside
    // is copied into its bad records).
    if (how.source.done) for (const message of messages) how.source.done(message);
    return read;
  }
}
