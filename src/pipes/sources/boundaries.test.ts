import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SOURCES = fileURLToPath(new URL('.', import.meta.url));

/** Every source file under src/pipes/sources (tests excluded), relative to it. */
function sourceFiles(dir = SOURCES): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [relative(SOURCES, path)] : [];
  });
}

describe('what a source may reach (docs/architecture.md, "Who may import whom")', () => {
  it('no source imports the store: its claims and cursors are the runtime’s (RunProgress in contract.ts)', () => {
    const files = sourceFiles();
    expect(files.length).toBeGreaterThan(50);
    const importers = files.filter(
      (file) =>
        file !== 'contract.ts' &&
        /from '[./]*\/store\/index\.js'/.test(readFileSync(join(SOURCES, file), 'utf8')),
    );
    expect(importers).toEqual([]);
  });
});
