// Builds the console (console/src, Preact) into dist/console: one minified script and one style
// sheet, each beside its gzip and brotli forms, which the server sends as they are
// (src/http/console-pages.ts). The sizes go to dist/console/sizes.json, which a test holds to the
// budget the README states. It builds beside dist/console and then takes its place, so a server
// starting meanwhile (a test beside a rebuild) finds the old console or the new, never none.
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
const built = join(root, 'dist', 'console');
const out = `${built}.building-${process.pid}`;
const old = `${built}.old-${process.pid}`;

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  entryPoints: { app: join(root, 'console', 'src', 'main.tsx') },
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome110', 'firefox110', 'safari16'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outdir: out,
  legalComments: 'none',
  logLevel: 'warning',
});
copyFileSync(join(root, 'console', 'index.html'), join(out, 'index.html'));

const sizes = {};
for (const name of readdirSync(out)) {
  const path = join(out, name);
  const body = readFileSync(path);
  const gzip = gzipSync(body, { level: 9 });
  const brotli = brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } });
  writeFileSync(`${path}.gz`, gzip);
  writeFileSync(`${path}.br`, brotli);
  sizes[name] = { bytes: statSync(path).size, gzip: gzip.length, brotli: brotli.length };
}
writeFileSync(join(out, 'sizes.json'), `${JSON.stringify(sizes, null, 2)}\n`);

// Two renames: the old console is out of the way only between them.
if (existsSync(built)) renameSync(built, old);
renameSync(out, built);
rmSync(old, { recursive: true, force: true });
