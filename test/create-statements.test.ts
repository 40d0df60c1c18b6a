import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceEngine, startSluice, type TestSluice } from './support/sluice.js';

// What a create asks the service's engine before it answers (issue 39: at 1M rows a one-off pipe's
// fixed steps weighed as much as its load). Column types the engine read as data types are not
// asked again by the next create; a text that is not one is asked every time and refused.

describe("a create's column types, read by the service's engine (chDB) once", () => {
  let s: TestSluice;
  /** Every statement the service's engine is asked, written down. */
  const seen: string[] = [];
  beforeAll(async () => {
    s = await startSluice();
    const engine = serviceEngine(s);
    const query = engine.query.bind(engine);
    engine.query = (sql, options) => {
      seen.push(sql);
      return query(sql, options);
    };
  });
  afterAll(async () => {
    await s?.close();
  });

  /** Creates a pipe with columns of `types`; its status and how many type checks it asked. */
  async function create(name: string, types: string[]) {
    seen.length = 0;
    const response = await s.request({
      method: 'POST',
      url: s.pipesUrl,
      body: {
        name,
        source: {
          objectStorage: { format: 'JSONEachRow', url: 'file:///none/*.ndjson', isContinuous: true },
        },
        destination: {
          database: name,
          table: 'rows',
          tableDefinition: { engine: { type: 'MergeTree' }, sortingKey: ['c0'] },
          columns: types.map((type, index) => ({ name: `c${index}`, type })),
        },
      },
    });
    const typeChecks = seen.filter((sql) => sql.includes('defaultValueOfTypeName')).length;
    return { status: response.statusCode, error: response.json?.error as string, typeChecks };
  }

  it('asks once for types it read before, and every time for a text that is not a type', async () => {
    expect(await create('first', ['UInt64', 'String', 'DateTime'])).toMatchObject({
      status: 200,
      typeChecks: 1,
    });
    expect(await create('again', ['UInt64', 'DateTime', 'String'])).toMatchObject({
      status: 200,
      typeChecks: 0,
    });
    // One type it has not read: asked alone.
    expect(await create('newer', ['UInt64', 'Int16'])).toMatchObject({ status: 200, typeChecks: 1 });
    for (const name of ['bad_one', 'bad_two']) {
      const refused = await create(name, ['UInt64', 'Strin']);
      expect(refused).toMatchObject({ status: 400, typeChecks: 1 });
      expect(refused.error).toMatch(/destination\.columns\[1\]\.type/);
    }
    const pipes = (await s.request({ method: 'GET', url: s.pipesUrl })).json.result as { name: string }[];
    expect(pipes.map((pipe) => pipe.name).sort()).toEqual(['again', 'first', 'newer']);
  });
});
