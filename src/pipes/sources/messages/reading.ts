import type { Scratch, SourceReader } from '../ports.js';

/**
 * What a stream's messages are sampled and inferred with outside a batch (create checks, schema
 * discovery): the source reader, and scratch files it reads them from.
 */
export interface Reading {
  sourceReader: SourceReader;
  scratch: Scratch;
}
