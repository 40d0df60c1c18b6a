import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Integration tests start real components (PGlite, PostgreSQL); two cores run two files at once.
    pool: 'forks',
    maxWorkers: 2,
  },
});
