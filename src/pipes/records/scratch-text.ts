import { open, writeFile } from 'node:fs/promises';
import { ScratchSpares } from './scratch-spares.js';

/**
 * The text files of batches the service's engine loaded (a stream's messages, a snapshot range's
 * COPY text), kept for the next batches' text (sources/ports.ts, Scratch.reuse): written over,
 * their pages are in memory already, where a new file's pages are new memory the kernel zeroes
 * (or, on a virtual machine that hands freed memory back to its host, fetches again): README,
 * "Benchmarks", Kafka. As many as the batches a pipe has in flight, per service.
 */
export const spareTexts = new ScratchSpares('text', 4);

/**
 * Writes `chunks` as the whole of the file at `path`: a new file, or over a reused one's old text
 * from its start, cut after the new.
 */
export async function writeWhole(path: string, chunks: readonly Buffer[], reused: boolean): Promise<void> {
  if (!reused) return writeFile(path, chunks);
  const file = await open(path, 'r+');
  try {
    let at = 0;
    for (const chunk of chunks) {
      // A write may take less than it was given: the rest follows from where it stopped.
      for (let done = 0; done < chunk.length; ) {
        const { bytesWritten } = await file.write(chunk, done, chunk.length - done, at + done);
        done += bytesWritten;
      }
      at += chunk.length;
    }
    await file.truncate(at);
  } finally {
    await file.close();
  }
}
