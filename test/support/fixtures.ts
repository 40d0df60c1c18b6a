import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedEngine, literal } from '../../src/engine/index.js';

export const FIXTURE_ROWS = 1000;
export const FIXTURE_ID_SUM = (FIXTURE_ROWS * (FIXTURE_ROWS - 1)) / 2;

/**
 * Files of 1000 rows (id UInt64, name String, amount Float64) in any format and compression the
 * engine writes, made by a chDB of the test's own so every format is produced by a real writer.
 */
export class FixtureWriter {
  private constructor(
    private readonly engine: EmbeddedEngine,
    private readonly dir: string,
  ) {}

  static async open(): Promise<FixtureWriter> {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-fixtures-'));
    return new FixtureWriter(new EmbeddedEngine(join(dir, 'engine'), { confined: false }), dir);
  }

  async write(
    name: string,
    format: string,
    options: {
      compression?: string;
      settings?: Record<string, string | number>;
      rows?: number;
      from?: number;
    } = {},
  ): Promise<Buffer> {
    const path = join(this.dir, name);
    const rows = options.rows ?? FIXTURE_ROWS;
    const from = options.from ?? 0;
    await this.engine.execute(
      `INSERT INTO FUNCTION file(${literal(path)}, ${literal(format)}, 'id UInt64, name String, amount Float64', ${literal(options.compression ?? 'none')})
       SELECT number + ${from}, concat('name ', toString(number + ${from})), (number + ${from}) * 0.5 FROM numbers(${rows})`,
      { settings: { engine_file_truncate_on_insert: 1, ...options.settings } },
    );
    return readFile(path);
  }

  async close(): Promise<void> {
    await this.engine.close();
    await rm(this.dir, { recursive: true, force: true });
  }
}
