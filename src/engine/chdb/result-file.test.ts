import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readAllRows, UnreadableResultError } from '../engine.js';
import { readResultFile } from './result-file.js';

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function fileOf(text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-result-file-'));
  dirs.push(dir);
  const path = join(dir, 'result.json');
  await writeFile(path, text);
  return path;
}

const HEADER =
  '["id", "s", "nested", "m"]\n["UInt64", "String", "Array(Tuple(String, UInt8))", "Map(String, String)"]\n';
/** Values that hold every character the conversion must see past: commas, brackets, quotes, escapes. */
const ROWS = [
  [1, 'plain', [['a', 1]], { k: 'v' }],
  [
    2,
    'a, b], [c',
    [
      ['x,y', 2],
      ['[', 3],
    ],
    { '],{': '"q"' },
  ],
  [3, 'back\\slash \\" quote', [], {}],
  [4, 'ünïcødé ✓ \n newline', [['}', 4]], { a: '\\' }],
  [5, null, [['', 0]], { '': '' }],
];

describe('result files read back as rows (JSONCompactEachRowWithNamesAndTypes)', () => {
  for (const chunkBytes of [1, 2, 3, 7, 64 * 1024]) {
    it(`makes each line's array an object, whatever the pieces the file is read in (${chunkBytes} bytes)`, async () => {
      // As the engine writes them: top-level values apart by `, `, nested ones as JSON.
      const text = HEADER + ROWS.map((row) => `[${row.map((v) => JSON.stringify(v)).join(', ')}]\n`).join('');
      const stream = await readResultFile(await fileOf(text), async () => {}, chunkBytes);
      expect(stream.columns.map((c) => c.name)).toEqual(['id', 's', 'nested', 'm']);
      expect(stream.columns[2]?.type).toBe('Array(Tuple(String, UInt8))');
      const { rows } = await readAllRows(stream);
      expect(rows).toEqual(ROWS.map(([id, s, nested, m]) => ({ id, s, nested, m })));
    });
  }

  it('an empty file is a statement without rows: no columns, no rows', async () => {
    const stream = await readResultFile(await fileOf(''), async () => {});
    expect(await readAllRows(stream)).toEqual({ columns: [], rows: [] });
  });

  it('a file in another format (the statement named its own FORMAT) is an UnreadableResultError, and is removed', async () => {
    for (const text of ['1,2\n3,4\n', '{"a":1}\n{"a":2}\n', '["a"]\n']) {
      let removed = false;
      await expect(
        readResultFile(await fileOf(text), async () => {
          removed = true;
        }),
      ).rejects.toBeInstanceOf(UnreadableResultError);
      expect(removed).toBe(true);
    }
  });
});
