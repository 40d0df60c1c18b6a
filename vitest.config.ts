import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Integration tests start real components (PGlite, PostgreSQL); two cores run two files at once.
    pool: 'forks',
    maxWorkers: 2,
    // s3rver pages its listings with a DES cipher, which OpenSSL 3 keeps in its legacy provider.
    execArgv: ['--openssl-legacy-provider'],
    // Prints how long the run took when it ends (npm test: the whole suite's duration).
    globalSetup: ['test/support/duration.ts'],
  },
});
