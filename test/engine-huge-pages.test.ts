import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  detectSandbox,
  EmbeddedEngine,
  ENGINE_ALLOCATOR,
  type SandboxPolicy,
  serviceEngineRoom,
} from '../src/engine/index.js';
import { environmentOf, hugePageMode, hugePagesMbOf } from './support/huge-pages.js';

/**
 * The engines' allocator asks for transparent huge pages (ENGINE_ALLOCATOR,
 * src/engine/chdb/engine-process.ts). Only a kernel in `madvise` mode shows whether it asked.
 */
describe.skipIf(hugePageMode() !== 'madvise')(
  "the engine's allocator backs its memory with huge pages (kernel huge-page mode: madvise)",
  () => {
    let dir: string;
    let policy: SandboxPolicy;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'sluice-huge-pages-'));
      policy = await detectSandbox('auto');
      if (policy.kind !== 'bwrap')
        throw new Error(
          `no sandbox here (${policy.reason}); install bubblewrap (apt-get install bubblewrap)`,
        );
    });
    afterAll(async () => {
      delete process.env.JE_MALLOC_CONF;
      await rm(dir, { recursive: true, force: true });
    });

    it('in the sandbox a service engine runs in, as without one', async () => {
      const dataDir = join(dir, 'data');
      const own = join(dataDir, 'services', 'own');
      await mkdir(own, { recursive: true });
      const confined = new EmbeddedEngine(own, {
        confined: false,
        sandbox: { policy, room: serviceEngineRoom({ dataDir }) },
      });
      const plain = new EmbeddedEngine(join(dir, 'plain'), { confined: false });
      try {
        for (const engine of [confined, plain]) {
          const pid = await loaded(engine);
          expect(environmentOf(pid)).toContain(`JE_MALLOC_CONF=${ENGINE_ALLOCATOR}`);
          expect(hugePagesMbOf(pid)).toBeGreaterThan(0);
        }
      } finally {
        await confined.close();
        await plain.close();
      }
    });

    it("an operator's own JE_MALLOC_CONF replaces Sluice's (thp:default: the kernel's mode, none here)", async () => {
      process.env.JE_MALLOC_CONF = 'thp:default';
      const engine = new EmbeddedEngine(join(dir, 'operator'), { confined: false });
      try {
        const pid = await loaded(engine);
        expect(environmentOf(pid)).toContain('JE_MALLOC_CONF=thp:default');
        expect(hugePagesMbOf(pid)).toBe(0);
      } finally {
        delete process.env.JE_MALLOC_CONF;
        await engine.close();
      }
    });
  },
);

/** The engine's process after it loaded about 100 MB into a table: memory new to it. */
async function loaded(engine: EmbeddedEngine): Promise<number> {
  await engine.execute(
    'CREATE TABLE IF NOT EXISTS default.wide (n UInt64, s String) ENGINE = MergeTree ORDER BY n',
  );
  await engine.execute("INSERT INTO default.wide SELECT number, repeat('x', 1000) FROM numbers(100000)");
  const pid = engine.processId();
  if (pid === undefined) throw new Error('the engine has no process after a statement');
  return pid;
}
