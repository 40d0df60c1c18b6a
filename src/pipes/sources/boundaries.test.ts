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

  it('no source holds an engine: it reaches the engines through the ports the runtime hands it (ports.ts)', () => {
    const files = sourceFiles().filter((file) => file !== 'ports.ts' && file !== 'contract.ts');
    // What a source may take from the engine's module: SQL text (quoting, names) and a type, never
    // an engine, the registry, or a helper that runs statements on an engine it would have to hold.
    const sqlText = new Set([
      'ident',
      'literal',
      'settingsClause',
      'tableName',
      'addColumnsSql',
      'TableSpec',
    ]);
    const taken = files.flatMap((file) => {
      const text = readFileSync(join(SOURCES, file), 'utf8');
      const imports = [
        ...text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'[./]*\/engine\/index\.js'/g),
      ];
      return imports.flatMap((match) =>
        (match[1] ?? '')
          .split(',')
          .map((name) => name.replace(/^\s*type\s+/, '').trim())
          .filter((name) => name && !sqlText.has(name))
          .map((name) => `${file}: ${name}`),
      );
    });
    expect(taken).toEqual([]);
    // Nor the loads that need one: the sink (ports.ts) is how a batch reaches its tables.
    const loaders = files.filter((file) =>
      /\b(loadThroughReader|loadFile|insertBadRecords)\b/.test(readFileSync(join(SOURCES, file), 'utf8')),
    );
    expect(loaders).toEqual([]);
  });
});
