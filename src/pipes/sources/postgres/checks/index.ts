/**
 * The checks a PostgreSQL pipe's config meets against its server: at create, at a PATCH (a move
 * must reach the same server), and after a failed run (a revoked privilege fails the pipe).
 */
export { changedPostgresProblems } from './change-checks.js';
export { postgresProblems } from './create-checks.js';
export { postgresRunFailure } from './run-failure.js';
