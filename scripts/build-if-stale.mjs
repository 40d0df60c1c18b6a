// `npm start` runs this first: it compiles src/ to dist/ only when a source changed since the last
// build (npm ci builds once, through the prepare script), so a start does not pay the compiler's
// seconds each time; the console (console/ to dist/console) likewise. A file or folder newer than the build's own record counts as a change, so an
// added, edited or deleted source rebuilds.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const record = join(root, 'dist', '.tsbuildinfo');

function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const entry of readdirSync(path)) latest = Math.max(latest, newest(join(path, entry)));
  return latest;
}

function builtAt(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return -1;
  }
}

const sources = ['src', 'tsconfig.json', 'tsconfig.build.json'].map((name) => join(root, name));
if (Math.max(...sources.map(newest)) > builtAt(record)) {
  const tsc = spawnSync(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: root,
      stdio: 'inherit',
    },
  );
  if (tsc.status !== 0) process.exit(tsc.status ?? 1);
  // tsc leaves its record alone when no output changed (a comment, a touch): mark the build done.
  const now = new Date();
  utimesSync(record, now, now);
}

// The console's build writes dist/console/sizes.json last: older than any console source, it is stale.
const consoleSources = ['console', 'scripts/build-console.mjs'].map((name) => join(root, name));
if (Math.max(...consoleSources.map(newest)) > builtAt(join(root, 'dist', 'console', 'sizes.json'))) {
  const built = spawnSync(process.execPath, [join(root, 'scripts', 'build-console.mjs')], {
    cwd: root,
    stdio: 'inherit',
  });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
