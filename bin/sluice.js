#!/usr/bin/env -S node --max-semi-space-size=2 --v8-pool-size=1
// The same flags as `npm start`, for the idle footprint (`npm run bench -- memory`): V8's young
// generation otherwise grows to 32 MB while the API starts and keeps it, and each of V8's worker
// threads keeps the memory it compiled with. Sluice holds little short-lived data in JavaScript
// (the engines read and write the data), so neither costs it speed.
// The `sluice` command runs the compiled CLI (npm ci builds dist/ through the prepare script).
import('../dist/cli/main.js').then((cli) => cli.main(process.argv.slice(2)));
