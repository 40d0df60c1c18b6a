import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedEngine } from './chdb/embedded-engine.js';
import type { Queryable } from './engine.js';
import { MAX_FRAGMENT_LENGTH, typeProblems } from './statement.js';

/** An engine that counts the statements it is asked (a new object: nothing learnt of another). */
function counting(engine: Queryable): Queryable & { statements: number } {
  const counted = {
    statements: 0,
    query: (sql: string, options?: Parameters<Queryable['query']>[1]) => {
      counted.statements += 1;
      return engine.query(sql, options);
    },
    execute: (sql: string, options?: Parameters<Queryable['execute']>[1]) => {
      counted.statements += 1;
      return engine.execute(sql, options);
    },
  };
  return counted;
}

describe("a create's column types checked by the engine (chDB)", () => {
  let dir: string;
  let engine: EmbeddedEngine;
  /** The engine, counting the statements it is asked. */
  let counted: Queryable & { statements: number };
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-statement-'));
    engine = new EmbeddedEngine(join(dir, 'engine'), { confined: false });
    counted = counting(engine);
  });
  afterAll(async () => {
    await engine.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('types that all are data types take one statement, however many columns', async () => {
    counted.statements = 0;
    const types = [
      'UInt64',
      'String',
      'Nullable(Float64)',
      'String',
      'DateTime64(3)',
      'Array(LowCardinality(String))',
    ];
    expect(await typeProblems(counted, types, 4)).toEqual(types.map(() => undefined));
    expect(counted.statements).toBe(1);
  });

  it('a type that is not one is named by its place, the others pass', async () => {
    const long = `Tuple(${'a UInt8, '.repeat(MAX_FRAGMENT_LENGTH / 8)}b UInt8)`;
    const problems = await typeProblems(counted, ['UInt64', 'Strin', 'String', long, 'Strin'], 4);
    expect(problems[0]).toBeUndefined();
    expect(problems[1]).toMatch(/^not a data type: /);
    expect(problems[2]).toBeUndefined();
    expect(problems[3]).toBe(`must be at most ${MAX_FRAGMENT_LENGTH} characters`);
    expect(problems[4]).toBe(problems[1]);
  });

  it('types the engine read before are not asked again; a type that is not one always is', async () => {
    // A fresh engine object: what `counted` learned above does not count here.
    const fresh = counting(engine);
    expect(await typeProblems(fresh, ['UInt32', 'String', 'Date'], 4)).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(fresh.statements).toBe(1);
    expect(await typeProblems(fresh, ['Date', 'UInt32', 'String'], 4)).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(fresh.statements).toBe(1);
    // One new type beside known ones: one statement, for it alone.
    expect(await typeProblems(fresh, ['Date', 'Int8'], 4)).toEqual([undefined, undefined]);
    expect(fresh.statements).toBe(2);
    for (let round = 0; round < 2; round += 1) {
      const problems = await typeProblems(fresh, ['Date', 'Strin'], 4);
      expect(problems[0]).toBeUndefined();
      expect(problems[1]).toMatch(/^not a data type: /);
    }
    expect(fresh.statements).toBe(4);
  });
});
