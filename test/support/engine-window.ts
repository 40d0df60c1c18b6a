import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';

/** The database of the stages (src/pipes/runtime/stages.ts). */
const STAGING_DATABASE = '_sluice_staging';
/** A part's directory: partition, first and last block, level (a mutation's version optional). */
const PART = /^(.+)_(\d+)_(\d+)_(\d+)(?:_\d+)?$/;

interface Part {
  name: string;
  partition: string;
  min: number;
  max: number;
  level: number;
}

function parsePart(name: string): Part | undefined {
  const match = PART.exec(name);
  if (!match) return undefined;
  const [, partition, min, max, level] = match;
  return { name, partition: partition as string, min: Number(min), max: Number(max), level: Number(level) };
}

const covers = (outer: Part, inner: Part) =>
  outer.partition === inner.partition &&
  outer.min <= inner.min &&
  inner.max <= outer.max &&
  inner.level < outer.level;

/**
 * Leaves a stopped service engine's stages as an engine killed inside a move leaves them: the move
 * (MOVE PARTITION) renamed each part into its destination, and the kill came before it wrote the
 * empty part that covers the moved one in the stage (src/engine/stages.ts, dropMovedStageParts).
 * Removes each empty covering part whose moved part is still on disk, so that part is back in its
 * stage when the engine starts; returns how many parts come back. The engine must not be running.
 */
export async function undoStageCovers(serviceDir: string): Promise<number> {
  const metadata = join(serviceDir, 'metadata', STAGING_DATABASE);
  let restored = 0;
  for (const file of await readdir(metadata)) {
    if (!file.endsWith('.sql')) continue;
    const uuid = /UUID '([0-9a-f-]{36})'/.exec(await readFile(join(metadata, file), 'utf8'))?.[1];
    if (!uuid) continue;
    const data = join(serviceDir, 'store', uuid.slice(0, 3), uuid);
    const parts = (await readdir(data).catch(() => [])).flatMap((name) => parsePart(name) ?? []);
    for (const cover of parts) {
      const rows = await readFile(join(data, cover.name, 'count.txt'), 'utf8').catch(() => '');
      if (cover.level === 0 || rows.trim() !== '0') continue;
      const moved = parts.filter((part) => covers(cover, part));
      if (moved.length === 0) continue;
      await rm(join(data, cover.name), { recursive: true });
      restored += moved.length;
    }
  }
  return restored;
}
