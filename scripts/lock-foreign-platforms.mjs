#!/usr/bin/env node
// The registry this project is built against mirrors only the linux-x64 build of some native
// packages (chdb's engine library). `npm install` then writes a lockfile without the other
// platforms' optional packages, and `npm ci` refuses it as out of sync. This adds a lockfile entry
// for each missing optional package, marked optional and restricted to its platform, so `npm ci`
// skips it on this machine and fetches it where the platform matches.
// Run after `npm install` changes package-lock.json: node scripts/lock-foreign-platforms.mjs
import { readFileSync, writeFileSync } from 'node:fs';

const PLATFORM = /(?:^|-)(darwin|linux|win32|android|freebsd)-(x64|arm64|ia32|arm)(?:-(gnu|musl))?$/;
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
let added = 0;
for (const [path, entry] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    const match = PLATFORM.exec(name);
    if (lock.packages[key] || !match) continue;
    const [, os, cpu, libc] = match;
    lock.packages[key] = { version, optional: true, os: [os], cpu: [cpu], ...(libc ? { libc: [libc] } : {}) };
    added += 1;
    console.log(`added ${key}@${version} (needed by ${path || 'the root'})`);
  }
}
if (added > 0) writeFileSync('package-lock.json', `${JSON.stringify(lock, null, 2)}\n`);
console.log(`${added} lockfile entries added`);
