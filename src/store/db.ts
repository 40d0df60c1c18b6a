import { mkdir } from 'node:fs/promises';
import { PGlite, type PGliteInterface } from '@electric-sql/pglite';
import type { Pool } from 'pg';
import { ConfigError } from '../config.js';
import { initPgliteDirectory, keepPgliteOnBaselineCompiler, PGLITE_START_PARAMS } from './pglite-memory.js';

/** Anything that runs one SQL statement: the database itself or an open transaction. */
export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
  /**
   * `copy <table> (<columns>) from '/dev/blob'` with `text` (PostgreSQL's COPY text format) as the
   * data: PGlite only, where COPY skips planning and executing a statement's arrays row by row.
   * Undefined on PostgreSQL, whose `pg` client takes COPY only through a stream of its own.
   */
  copyFrom?(sql: string, text: string): Promise<void>;
}

/**
 * The metadata database in one PostgreSQL dialect, whatever carries it: PGlite in-process by default,
 * a PostgreSQL server (`pg`) when SLUICE_DATABASE_URL is set. Repositories see only this interface.
 */
export interface Db extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** COPY ... FROM '/dev/blob' on PGlite or one of its transactions: the text is the blob. */
function copyThrough(q: Pick<PGliteInterface, 'query'>) {
  return async (sql: string, text: string): Promise<void> => {
    await q.query(sql, [], { blob: new Blob([text]) });
  };
}

export async function openPglite(dir: string): Promise<Db> {
  await mkdir(dir, { recursive: true });
  await initPgliteDirectory(dir);
  keepPgliteOnBaselineCompiler();
  const db = await PGlite.create(dir, { startParams: PGLITE_START_PARAMS });
  return {
    kind: 'pglite',
    async query<T>(sql: string, params: unknown[] = []) {
      return (await db.query<T>(sql, params)).rows;
    },
    // PGlite has one connection and runs one transaction at a time, so this also serialises writers.
    async exec(sql: string) {
      await db.exec(sql);
    },
    copyFrom: copyThrough(db),
    transaction<T>(work: (tx: Queryable) => Promise<T>) {
      return db.transaction((tx) =>
        work({
          query: async <R>(sql: string, params: unknown[] = []) => (await tx.query<R>(sql, params)).rows,
          exec: async (sql: string) => {
            await tx.exec(sql);
          },
          copyFrom: copyThrough(tx),
        }),
      );
    },
    close: () => db.close(),
  };
}

export async function openPostgres(url: string, onIdleError: (error: Error) => void): Promise<Db> {
  // Loaded only when a PostgreSQL URL is configured (it weighs on the embedded default's footprint).
  const { default: pg } = await import('pg');
  const pool: Pool = new pg.Pool({ connectionString: url, max: 10 });
  // An idle client that loses its connection emits 'error'; without a listener that would crash
  // the process. It is reported, and the next query gets a fresh connection.
  pool.on('error', onIdleError);
  // A URL that leads nowhere (or a wrong password) is the user's to fix: named, without a stack.
  await pool.query('select 1').catch(async (error: Error & { code?: string }) => {
    await pool.end();
    throw new ConfigError([
      `SLUICE_DATABASE_URL (--database-url): cannot connect to the metadata database: ${error.message || error.code}`,
    ]);
  });
  return {
    kind: 'postgres',
    async query<T>(sql: string, params: unknown[] = []) {
      return (await pool.query(sql, params)).rows as T[];
    },
    async exec(sql: string) {
      await pool.query(sql);
    },
    async transaction<T>(work: (tx: Queryable) => Promise<T>) {
      const client = await pool.connect();
      try {
        await client.query('begin');
        const result = await work({
          query: async <R>(sql: string, params: unknown[] = []) =>
            (await client.query(sql, params)).rows as R[],
          exec: async (sql: string) => {
            await client.query(sql);
          },
        });
        await client.query('commit');
        return result;
      } catch (error) {
        await client.query('rollback').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}
