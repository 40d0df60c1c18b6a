#!/usr/bin/env node
// The `sluice` command runs the compiled CLI (npm ci builds dist/ through the prepare script).
import('../dist/cli/main.js').then((cli) => cli.main(process.argv.slice(2)));
